"""API keys through the API, each with its scopes (``docs/privacy.md``). Every error in the
STATUS shape."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Path, Query
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from callplane.http.deps import CurrentTenant, SessionDep
from callplane.http.families import STATUS
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.pagination import total_pages
from callplane.kit.scopes import KEYS
from callplane.orgs import keys
from callplane.orgs.service import revoke_key

router = family_router(STATUS, scopes=KEYS, tags=["api keys"])


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=255)
    scopes: list[Annotated[str, Field(max_length=100)]] = Field(
        max_length=50, description="Scopes from the documented list, or ['*'] for all"
    )
    expires_at: datetime | None = Field(default=None, description="When the key stops working")


class KeyOut(BaseModel):
    id: int
    name: str
    scopes: list[str]
    expires_at: datetime | None
    created_at: datetime
    revoked_at: datetime | None


class KeyCreated(BaseModel):
    class Shown(KeyOut):
        key: str = Field(description="The key itself, shown only in this answer")

    api_key: Shown


class KeyList(BaseModel):
    api_keys: list[KeyOut]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class Revoked(BaseModel):
    success: Literal[True] = True


@router.post("/api_keys", response_model=KeyCreated, status_code=201, summary="Create an API key")
async def create_api_key(body: KeyCreate, session: SessionDep, tenant: CurrentTenant) -> Response:
    """A new key with `scopes` (never more than the calling key holds: 403) until `expires_at`.
    The key is in this answer only; the server keeps its hash."""
    issued, key = await keys.create_key(session, tenant, body.name, body.scopes, body.expires_at)
    shown: dict[str, Any] = {**keys.key_wire(key), "key": issued.api_key}
    return json_response({"api_key": shown}, 201)


@router.get("/api_keys", response_model=KeyList, summary="List API keys")
async def list_api_keys(
    session: SessionDep,
    tenant: CurrentTenant,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 20,
) -> Response:
    """The organization's keys, oldest first, revoked ones included (never the keys)."""
    found, total = await keys.page_of_keys(session, tenant.organization_id, page, page_size)
    return json_response(
        {
            "api_keys": found,
            "total_count": total,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(total, page_size),
        }
    )


@router.delete("/api_keys/{id}", response_model=Revoked, summary="Revoke an API key")
async def delete_api_key(
    id: Annotated[int, Path(ge=1, le=2**62)], session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Revoke the key: refused (401) everywhere within a second."""
    await revoke_key(session, id, tenant.organization_id)
    return json_response({"success": True})
