"""Accounts of the dashboard's people. Services flush, never commit."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import Conflict, InvalidInput
from callplane.kit.tenancy import across_organizations, owned_by
from callplane.models.base import utcnow
from callplane.models.users import EMAIL_MAX_LENGTH, User
from callplane.orgs.service import get_organization
from callplane.users.passwords import check_strength, hash_password, verify_password
from callplane.users.roles import check_role

# Deliberately loose: one @, something on both sides, a dot in the domain, no spaces. The
# address is only a sign-in name here; nothing is ever sent to it.
_EMAIL = re.compile(r"[^@\s\x00-\x1f\x7f]+@[^@\s\x00-\x1f\x7f]+\.[^@\s\x00-\x1f\x7f]+")


@dataclass(frozen=True, slots=True)
class Person:
    """Who is signed in: the organization every dashboard query is scoped to."""

    id: int
    organization_id: int
    email: str
    session_version: int
    role: str = "owner"


def _person(user: User) -> Person:
    return Person(user.id, user.organization_id, user.email, user.session_version, user.role)


def normalize_email(value: str) -> str:
    email = value.strip().lower()
    if len(email) > EMAIL_MAX_LENGTH or not _EMAIL.fullmatch(email):
        raise InvalidInput("email: not an email address", loc=("body", "email"))
    return email


async def create_user(
    session: AsyncSession,
    organization_id: int,
    email: str,
    password: str,
    role: str | None = None,
) -> Person:
    """A new person; without ``role``, the organization's first person is its owner and every
    later one a member."""
    await get_organization(session, organization_id)
    email = normalize_email(email)
    check_strength(password)
    if role is None:
        anyone = await session.scalar(
            select(User.id).where(owned_by(User, organization_id)).limit(1)
        )
        role = "owner" if anyone is None else "member"
    user = User(
        organization_id=organization_id,
        email=email,
        password_hash=await hash_password(password),
        session_version=0,
        role=check_role(role),
    )
    try:
        async with session.begin_nested():
            session.add(user)
            await session.flush()
    except IntegrityError:
        raise Conflict(f"A person with the email {email} already exists") from None
    return _person(user)


async def find_user_by_email(session: AsyncSession, email: str) -> User | None:
    try:
        normalized = normalize_email(email)
    except InvalidInput:
        return None
    # Signing in names a person by email alone (unique across the deployment): the organization
    # is what this finds.
    query = across_organizations(
        select(User).where(User.email == normalized), "sign-in finds the person by email alone"
    )
    user: User | None = await session.scalar(query)
    return user


async def authenticate(session: AsyncSession, email: str, password: str) -> Person | None:
    """The person whose email and password these are, or None (the same for either mistake)."""
    user = await find_user_by_email(session, email)
    if len(password) > 1024:
        return None
    if not await verify_password(user.password_hash if user else None, password):
        return None
    assert user is not None
    return _person(user)


async def get_person(
    session: AsyncSession, organization_id: int, user_id: int, session_version: int
) -> Person | None:
    """The person a session cookie names, while that session has not been ended."""
    user = await session.scalar(
        select(User).where(User.organization_id == organization_id, User.id == user_id)
    )
    if user is None or user.session_version != session_version:
        return None
    return _person(user)


async def end_sessions(session: AsyncSession, person: Person) -> None:
    """Every session of this person stops working (sign-out, password change)."""
    await session.execute(
        update(User)
        .where(User.organization_id == person.organization_id, User.id == person.id)
        .values(session_version=User.session_version + 1, updated_at=utcnow())
    )


async def change_password(session: AsyncSession, person: Person, current: str, new: str) -> Person:
    user = await session.scalar(
        select(User).where(User.organization_id == person.organization_id, User.id == person.id)
    )
    if user is None or not await verify_password(user.password_hash, current):
        raise InvalidInput(
            "current_password: is not your password", loc=("body", "current_password")
        )
    check_strength(new, "new_password")
    user.password_hash = await hash_password(new)
    user.session_version += 1
    await session.flush()
    return _person(user)
