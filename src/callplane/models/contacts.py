"""Models of the contacts domain (filled in by its issue)."""
