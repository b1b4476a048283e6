"""callplane: a self-hostable server for the public API of an AI voice-agent platform."""

__version__ = "0.1.0"
