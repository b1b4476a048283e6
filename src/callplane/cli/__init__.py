"""The ``callplane`` command (DESIGN §2)."""

from callplane.cli.main import main

__all__ = ["main"]
