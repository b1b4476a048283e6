"""The demo organization's person, so a fresh ``make run`` can sign in to the dashboard.

The password is derived from the deployment's signing key (like the demo API key), so every run
can print it while only its hash is stored. A password the person has changed since is never
reset: the run then says so instead of printing a password that no longer works.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.deployment import derive_secret, signing_key
from callplane.settings import Settings
from callplane.users.passwords import verify_password
from callplane.users.service import create_user, find_user_by_email

DEMO_EMAIL = "demo@example.com"


@dataclass(frozen=True, slots=True)
class DemoPerson:
    email: str
    #: None when the person changed the password since it was created.
    password: str | None


async def ensure_demo_person(
    session: AsyncSession, settings: Settings, organization_id: int
) -> DemoPerson:
    password = derive_secret(await signing_key(session, settings), "demo-password", 12)
    user = await find_user_by_email(session, DEMO_EMAIL)
    if user is None:
        await create_user(session, organization_id, DEMO_EMAIL, password)
        return DemoPerson(DEMO_EMAIL, password)
    if await verify_password(user.password_hash, password):
        return DemoPerson(DEMO_EMAIL, password)
    return DemoPerson(DEMO_EMAIL, None)
