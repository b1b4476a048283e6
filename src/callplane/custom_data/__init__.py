"""Custom data tables: user-defined schemas and records."""
