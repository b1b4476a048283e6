"""Fixture sections of this domain (to be filled in by its issue)."""
