from callplane.cli.main import main

main()
