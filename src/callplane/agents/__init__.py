"""Agents: versioned configuration that calls run (DESIGN §15)."""
