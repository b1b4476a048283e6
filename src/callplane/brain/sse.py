"""Server-sent events, as chat-completions servers stream them.

Only the ``data`` field matters to us: an event is the ``data:`` lines up to a blank line, joined
by newlines (the SSE rule, so a JSON payload split over several lines still arrives whole).
Comment lines (``:``, used as keep-alives) and other fields are skipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator


async def sse_data(lines: AsyncIterable[str]) -> AsyncIterator[str]:
    data: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)
