"""The PostgreSQL floor for bench/custom_data.py: FastAPI + asyncpg, no auth, no rate limit.

The same three requests as the harness' ``ours`` profile on the same table (``udt_<id>`` of
callplane's database, read straight): each is one asyncpg prepared statement (the list: the page
and its exact count), with the same response bodies as callplane's, serialised by orjson.

    FLOOR_PG_DSN=postgresql://postgres@127.0.0.1:5432/db FLOOR_TABLE=udt_1 \\
        uvicorn --app-dir bench floor_pg_app:app --workers 2
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response

DSN = os.environ.get("FLOOR_PG_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")
# Built from an integer id by bench/custom_data.py, never from user input.
TABLE = os.environ.get("FLOOR_TABLE", "udt_1")
#: The table's rows belong to this organization; the list filters on it, as ours does, so both
#: use the same index (organization_id, active, score, id).
ORG = int(os.environ.get("FLOOR_ORG", "1"))
COLUMNS = "id, organization_id, name, email, score, active, tier, synced_at, created_at, updated_at"
GET = f'SELECT {COLUMNS} FROM "{TABLE}" WHERE id = $1'  # noqa: S608
PATCH = f'UPDATE "{TABLE}" SET score = $2, updated_at = now() WHERE id = $1 RETURNING {COLUMNS}'  # noqa: S608
PAGE = (
    f'SELECT {COLUMNS} FROM "{TABLE}" WHERE organization_id = $4 AND active = $1 '  # noqa: S608
    "ORDER BY score DESC, id DESC LIMIT $2 OFFSET $3"
)
COUNT = f'SELECT count(*) FROM "{TABLE}" WHERE organization_id = $2 AND active = $1'  # noqa: S608
JSON = "application/json"
_pool: Any = None


@asynccontextmanager
async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
    global _pool
    _pool = await asyncpg.create_pool(DSN, min_size=4, max_size=10)
    yield
    await _pool.close()


app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None, lifespan=lifespan)


def _dumps(content: Any) -> bytes:
    return orjson.dumps(content, option=orjson.OPT_UTC_Z)


@app.get("/v1/data/customers")
async def list_records(page: int = 1, per_page: int = 50, active: bool = True) -> Response:
    async with _pool.acquire() as conn:
        rows = await conn.fetch(PAGE, active, per_page, (page - 1) * per_page, ORG)
        total = await conn.fetchval(COUNT, active, ORG)
    body = {
        "records": [dict(r) for r in rows],
        "total_count": total,
        "page": page,
        "per_page": per_page,
    }
    return Response(_dumps(body), media_type=JSON)


@app.get("/v1/data/customers/{rid}")
async def get_record(rid: int) -> Response:
    async with _pool.acquire() as conn:
        row = await conn.fetchrow(GET, rid)
    if row is None:
        return Response(b'{"error": "not found"}', 404, media_type=JSON)
    return Response(_dumps({"record": dict(row)}), media_type=JSON)


@app.patch("/v1/data/customers/{rid}")
async def patch_record(rid: int, request: Request) -> Response:
    data = orjson.loads(await request.body())
    async with _pool.acquire() as conn:
        row = await conn.fetchrow(PATCH, rid, int(data["score"]))
    if row is None:
        return Response(b'{"error": "not found"}', 404, media_type=JSON)
    return Response(_dumps({"record": dict(row)}), media_type=JSON)
