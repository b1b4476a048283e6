"""External (recorded, imported) calls and their recording legs."""
