"""Organizations and API keys."""
