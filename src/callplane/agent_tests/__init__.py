"""Agent tests, test runs, replays and traffic splits (docs/agent-tests.md)."""
