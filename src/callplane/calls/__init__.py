"""Calls: create, read, list, cancel (docs/api-contract.md)."""
