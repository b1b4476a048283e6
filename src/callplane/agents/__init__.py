"""Agents: versioned configuration that calls run (docs/agents.md)."""
