"""SQL functions SQLite lacks and callplane's statements use, installed on every connection
(the session's, ``kit.sqlite_inline``, and those of ``kit.driver.SqlitePool``)."""

from __future__ import annotations

import hashlib
import sqlite3


def _sha256_hex(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


def install(conn: sqlite3.Connection) -> None:
    # PostgreSQL spells it encode(sha256(convert_to(text, 'UTF8')), 'hex') (``audit.chain``).
    conn.create_function("callplane_sha256", 1, _sha256_hex, deterministic=True)
