"""Models of the external_calls domain (filled in by its issue)."""
