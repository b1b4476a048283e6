"""Knowledge bases: documents the agent can look things up in (docs/knowledge.md)."""
