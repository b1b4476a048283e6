"""The floor for request-path benchmarks: the same server and stack as callplane, minimal work.

FastAPI + callplane's own ``Database`` (the same engine, pool and SQLite pragmas), one Core query
by primary key and pre-serialized JSON; no authentication, no rate limit, no ORM, no wire model.
Whatever callplane does on top of this is what the ratio in ``bench/voices.py`` measures.
"""

from __future__ import annotations

import os
import uuid

import orjson
from fastapi import FastAPI
from sqlalchemy import select
from starlette.responses import Response

from callplane.kit.db import Database
from callplane.models.voices import Voice

_db: Database | None = None
_voices = Voice.__table__
_QUERY = select(_voices).where(_voices.c.organization_id == 1)


def _database() -> Database:
    global _db
    if _db is None:  # after the worker fork
        _db = Database(os.environ["CALLPLANE_DATABASE_URL"])
    return _db


def create_app() -> FastAPI:
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

    @app.get("/static")
    async def static() -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    @app.get("/floor/voices/{voice_id}")
    async def voice(voice_id: uuid.UUID) -> Response:
        async with _database().read_sessions() as session:
            row = (await session.execute(_QUERY.where(_voices.c.id == voice_id))).mappings().first()
        if row is None:
            return Response(b'{"error":"Voice not found"}', 404, media_type="application/json")
        return Response(orjson.dumps(dict(row)), media_type="application/json")

    return app
