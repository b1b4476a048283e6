"""Models of the calls domain (filled in by its issue)."""
