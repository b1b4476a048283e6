"""Dashboard roles (docs/privacy.md): owner and admin do everything, a member everything but
keys, a viewer only reads; every dashboard change and sign-in is an audit event."""

from __future__ import annotations

import pytest

from callplane.kit.tenancy import select_owned
from callplane.models.users import User
from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.factories import make_org, runtime_of
from tests.test_cli import callplane, ok_json


async def _signed_in(app, org, role: str, client):
    person = await make_person(app, org, role=role)
    response = await sign_in(client, person.email, person.password)
    assert response.status_code == 303
    return person


@pytest.mark.parametrize(
    "role, keys_page, create_key, agents_page, create_agent",
    [
        ("owner", 200, 303, 200, 303),
        ("admin", 200, 303, 200, 303),
        ("member", 403, 403, 200, 303),
        ("viewer", 403, 403, 200, 403),
    ],
)
async def test_what_each_role_may_do(app, role, keys_page, create_key, agents_page, create_agent):
    org = await make_org(app)
    async with browser_client(app) as c:
        await _signed_in(app, org, role, c)
        assert (await c.get("/dashboard/keys")).status_code == keys_page
        overview = await c.get("/dashboard/agents")
        assert overview.status_code == agents_page
        token = csrf_of(overview)
        made = await c.post("/dashboard/keys", data={"name": "k", "csrf_token": token})
        assert made.status_code == create_key
        if create_key == 403:
            assert "does not allow this" in made.text
        agent = await c.post(
            "/dashboard/agents",
            data={"name": "Desk", "prompt": "Be brief.", "csrf_token": token},
        )
        assert agent.status_code == create_agent
        # Everyone signs out.
        assert (await c.post("/dashboard/sign-out", data={"csrf_token": token})).status_code == 303


async def test_dashboard_changes_and_sign_ins_are_audited(app, client):
    org = await make_org(app)
    async with browser_client(app) as c:
        person = await _signed_in(app, org, "owner", c)
        page = await c.get("/dashboard/keys")
        assert (
            await c.post("/dashboard/keys", data={"name": "k", "csrf_token": csrf_of(page)})
        ).status_code == 303
        # A failed sign-in changes nothing and is not an event.
        async with browser_client(app) as other:
            assert (await sign_in(other, person.email, "wrong password")).status_code == 401
    events = (await client.get("/v1/audit_log", headers=org.headers)).json()["events"]
    assert [(e["action"], e["actor"]) for e in reversed(events)] == [
        ("dashboard.sign_in", f"user:{person.email}"),
        ("dashboard.create_key", f"user:{person.email}"),
    ]
    assert events[0]["resource_type"] == "keys"


async def test_users_create_takes_a_role_and_defaults_to_owner_then_member(app, database_url):
    org = await make_org(app)

    def create(email: str, *role: str) -> dict:
        return ok_json(
            callplane(database_url, "users", "create", "--org", str(org.id), email, *role, "--json")
        )

    made = [
        create("a@example.com"),
        create("b@example.com"),
        create("c@example.com", "--role", "viewer"),
    ]
    assert all(set(m) == {"id", "email", "password"} for m in made)
    async with runtime_of(app).db.session(write=False) as session:
        roles = (
            await session.scalars(select_owned(User, org.id, User.role).order_by(User.id))
        ).all()
    assert roles == ["owner", "member", "viewer"]
    text = callplane(
        database_url, "users", "create", "--org", str(org.id), "e@example.com", "--role", "admin"
    )
    assert text.returncode == 0 and "e@example.com, admin" in text.stdout
    bad = callplane(
        database_url, "users", "create", "--org", str(org.id), "d@example.com", "--role", "root"
    )
    assert bad.returncode == 1
    assert "Unknown role 'root'" in bad.stderr
