"""The demo organization of ``make run``: created once, with sample data from ``demo/*.json``.

Its API key is derived from the deployment's signing key, so ``callplane demo`` can print the
same working key on every run while only its hash is stored, like any other key.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.deployment import derive_secret, signing_key
from callplane.kit.tenancy import select_owned
from callplane.loader import load_document
from callplane.models.orgs import ApiKey, AppSetting
from callplane.orgs.service import (
    KEY_PREFIX,
    create_organization,
    get_organization,
    hash_key,
    issue_key,
)
from callplane.settings import Settings

DEMO_ORG_NAME = "Demo organization"
_DEMO_ORG_SETTING = "demo_organization_id"


def demo_document() -> dict[str, Any]:
    """Every ``demo/*.json`` merged (each domain ships the sections it owns)."""
    document: dict[str, Any] = {}
    for resource in sorted(files(__name__).iterdir(), key=lambda r: r.name):
        if resource.name.endswith(".json"):
            document.update(orjson.loads(resource.read_bytes()))
    return document


async def load_demo_into(
    session: AsyncSession, settings: Settings, organization_id: int
) -> dict[str, list[Any]]:
    """The sample data, into any existing organization: the documents give no deployment-wide
    ids (agents are named by uuid), and every other id is unique only within an organization."""
    await get_organization(session, organization_id)
    return await load_document(session, settings, organization_id, demo_document())


async def ensure_demo(session: AsyncSession, settings: Settings) -> tuple[int, str | None]:
    """(organization id, API key) of the demo organization, creating it on first use.

    The key is None when an operator revoked it: a revoked key stays revoked (another key is
    made with ``callplane keys create``), whatever command runs again.
    """
    org_id_text = await session.scalar(
        select(AppSetting.value).where(AppSetting.key == _DEMO_ORG_SETTING)
    )
    plain = KEY_PREFIX + "demo_" + derive_secret(await signing_key(session, settings), "demo-key")
    if org_id_text is None:
        org = await create_organization(session, DEMO_ORG_NAME)
        session.add(AppSetting(key=_DEMO_ORG_SETTING, value=str(org.id)))
        await issue_key(session, org.id, name="demo", plain=plain)
        await load_document(session, settings, org.id, demo_document())
        return org.id, plain
    org_id = int(org_id_text)
    existing = (
        await session.execute(
            select_owned(ApiKey, org_id, ApiKey.id, ApiKey.revoked_at).where(
                ApiKey.key_hash == hash_key(plain)
            )
        )
    ).first()
    if existing is None:
        await issue_key(session, org_id, name="demo", plain=plain)
    elif existing.revoked_at is not None:
        return org_id, None
    return org_id, plain
