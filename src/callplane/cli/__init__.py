"""The ``callplane`` command (README.md#command-line)."""

from callplane.cli.main import main

__all__ = ["main"]
