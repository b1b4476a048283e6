"""Models of the custom_data domain (filled in by its issue)."""
