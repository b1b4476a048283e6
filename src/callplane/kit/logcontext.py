"""Correlation: the call and the request a log line is about, without passing them around.

A worker runs each call in its own task, started in a context naming the call
(``call_context``), so every line logged while holding it (turns, brain, speech, recording,
after-call work) carries ``call_id`` and ``organization_id``; an HTTP request sets
``request_id`` for as long as it is served. ``ContextFilter`` (installed on callplane's log
handler by ``kit.logs``) copies them onto each record unless the line names them itself.
"""

from __future__ import annotations

import contextvars
import logging
import uuid

call_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("call_id", default=None)
organization_id: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "organization_id", default=None
)
request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)


def call_context(organization: int, call: uuid.UUID | str) -> contextvars.Context:
    """A copy of the current context naming the call: pass it to ``asyncio.create_task``."""
    context = contextvars.copy_context()
    context.run(_name_call, organization, str(call))
    return context


def _name_call(organization: int, call: str) -> None:
    call_id.set(call)
    organization_id.set(organization)


class ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        fields = record.__dict__
        if "call_id" not in fields and (call := call_id.get()) is not None:
            fields["call_id"] = call
            if "organization_id" not in fields:
                fields["organization_id"] = organization_id.get()
        if "request_id" not in fields and (request := request_id.get()) is not None:
            fields["request_id"] = request
        return True
