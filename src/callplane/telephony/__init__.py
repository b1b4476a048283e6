"""Telephony adapters: the phone network behind the engine (docs/engine-core.md).

An adapter knows nothing of calls, organizations or the database: it places and answers calls,
moves audio (or, for the simulated network, text) both ways, and reports how a call ended. The
engine (``callplane.engine``) decides everything else. See ``base`` for the interface.
"""
