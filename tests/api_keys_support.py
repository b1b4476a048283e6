"""Keys with chosen scopes, made through the service the CLI and the API use."""

from __future__ import annotations

from fastapi import FastAPI

from callplane.orgs.service import issue_key
from tests.factories import OrgHandle, runtime_of


async def scoped_key(app: FastAPI, org: OrgHandle, scopes: list[str]) -> str:
    async with runtime_of(app).db.session(write=True) as session:
        issued = await issue_key(session, org.id, "scoped", scopes=" ".join(scopes))
        await session.commit()
    return issued.api_key
