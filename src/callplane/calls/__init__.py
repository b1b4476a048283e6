"""Calls: create, read, list, cancel (DESIGN §5, §6)."""
