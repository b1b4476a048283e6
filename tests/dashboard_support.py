"""Helpers of the dashboard tests: people, and an httpx client that signs in like a browser."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

import httpx
from fastapi import FastAPI

from callplane.users.service import create_user
from tests.factories import OrgHandle, runtime_of

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass(frozen=True)
class PersonHandle:
    id: int
    email: str
    password: str


async def make_person(
    app: FastAPI, org: OrgHandle, email: str | None = None, role: str = "owner"
) -> PersonHandle:
    email = email or f"person-{secrets.token_hex(4)}@example.com"
    password = secrets.token_urlsafe(12)
    async with runtime_of(app).db.session(write=True) as session:
        person = await create_user(session, org.id, email, password, role)
        await session.commit()
    return PersonHandle(person.id, person.email, password)


def csrf_of(page: httpx.Response) -> str:
    match = _CSRF.search(page.text)
    assert match, page.text[:500]
    return match.group(1)


def browser_client(app: FastAPI, address: str = "127.0.0.1") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


async def sign_in(client: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    page = await client.get("/dashboard/sign-in")
    return await client.post(
        "/dashboard/sign-in",
        data={"email": email, "password": password, "csrf_token": csrf_of(page)},
    )
