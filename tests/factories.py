"""Test data, created through the same services the CLI uses (real keys, real loader)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI

from callplane.loader import load_document
from callplane.orgs.service import create_organization, issue_key
from callplane.runtime import Runtime
from tests import tenancy_check


@dataclass(frozen=True)
class OrgHandle:
    id: int
    api_key: str
    key_id: int

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}


def runtime_of(app: FastAPI) -> Runtime:
    runtime: Runtime = app.state.runtime
    return runtime


async def make_org(app: FastAPI, name: str = "Acme") -> OrgHandle:
    with tenancy_check.checked():
        return await _make_org(app, name)


async def _make_org(app: FastAPI, name: str) -> OrgHandle:
    async with runtime_of(app).db.session(write=True) as session:
        org = await create_organization(session, name)
        key = await issue_key(session, org.id)
        await session.commit()
        return OrgHandle(id=org.id, api_key=key.api_key, key_id=key.id)


async def load(app: FastAPI, org: OrgHandle, document: dict[str, Any]) -> dict[str, list[Any]]:
    """Load a fixture document (docs/api-contract.md#the-fixture-document) for ``org``; returns the
    created ids."""
    runtime = runtime_of(app)
    with tenancy_check.checked():
        async with runtime.db.session(write=True) as session:
            created = await load_document(session, runtime.settings, org.id, document)
            await session.commit()
            return created
