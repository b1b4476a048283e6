"""UUIDs and UTC timestamps read as the text a JSON body shows, for reads whose values only go
back out as JSON (``Prepared.compile(..., wire=True)``).

Read through their column types, a UUID that SQLite stores as 32 hex digits is parsed into a
``uuid.UUID`` and formatted back into text, and a timestamp stored as naive UTC text is parsed,
given its zone and formatted again by orjson: for a page of external calls (141 UUIDs and 220
timestamps) that cost more than the queries. Here the stored text is rearranged instead, into the
same characters: a UUID lower case and hyphenated (``str(uuid.UUID)``); a timestamp as orjson
writes an aware UTC datetime with ``OPT_UTC_Z``, ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``, the fraction
only when it is not zero. ``tests/test_external_calls_body.py`` pins the bytes on both databases.

PostgreSQL's driver decodes both in C already: a UUID only becomes text, a timestamp (aware, UTC)
is left for orjson, exactly as the column type's processor would have left it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import Uuid
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

from callplane.models.base import UTCDateTime

Processor = Callable[[Any], Any] | None


def processor(type_: TypeEngine[Any], dialect: Dialect, usual: Processor) -> Processor:
    """How to read a column of ``type_`` for a JSON body; ``usual`` (the type's own result
    processor) for every other type, and for a stored value of unexpected shape."""
    sqlite = dialect.name == "sqlite"
    if isinstance(type_, Uuid):
        return _uuid_text if sqlite else str
    if isinstance(type_, UTCDateTime):
        if not sqlite:
            return None
        assert usual is not None
        return _timestamp_text(usual)
    return usual


def _uuid_text(stored: Any) -> str:
    if isinstance(stored, str) and len(stored) == 32:
        h = stored.lower()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return str(stored if isinstance(stored, uuid.UUID) else uuid.UUID(stored))


def _timestamp_text(usual: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def text(stored: Any) -> Any:
        # SQLAlchemy's storage format on SQLite: "YYYY-MM-DD HH:MM:SS.ffffff", always UTC.
        if (
            isinstance(stored, str)
            and len(stored) == 26
            and stored[10] == " "
            and stored[19] == "."
        ):
            if stored.endswith(".000000"):
                return f"{stored[:10]}T{stored[11:19]}Z"
            return f"{stored[:10]}T{stored[11:]}Z"
        # Any other shape goes the type's way: the aware datetime, which orjson writes the same.
        return usual(stored)

    return text
