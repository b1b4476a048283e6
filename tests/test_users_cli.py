"""``callplane users create`` (README.md#command-line) and the demo person printed by ``callplane
demo``.

Each CLI run costs seconds of start-up, so the rules behind the commands are exercised in process
and the commands themselves once per behaviour.
"""

from __future__ import annotations

import pytest

from callplane.errors import Conflict, InvalidInput, NotFound
from callplane.users.demo import DEMO_EMAIL, ensure_demo_person
from callplane.users.service import (
    change_password,
    create_user,
    find_user_by_email,
    get_person,
)
from tests.dashboard_support import browser_client, sign_in
from tests.factories import make_org, runtime_of
from tests.test_cli import callplane, ok_json


async def test_users_create_prints_a_password_that_signs_in(app, database_url):
    org = await make_org(app)
    made = ok_json(
        callplane(
            database_url, "users", "create", "--org", str(org.id), "Ann@Example.com", "--json"
        )
    )
    assert set(made) == {"id", "email", "password"} and isinstance(made["id"], int)
    assert made["email"] == "ann@example.com" and len(made["password"]) >= 16
    async with browser_client(app) as c:
        assert (await sign_in(c, "ann@example.com", made["password"])).status_code == 303

    again = callplane(database_url, "users", "create", "--org", str(org.id), "ann@example.com")
    assert again.returncode == 1 and "already exists" in again.stderr


@pytest.mark.parametrize(
    ("org_id", "email", "password", "error"),
    [
        (999, "bob@example.com", "long enough", NotFound),
        (None, "not-an-email", "long enough", InvalidInput),
        (None, "a b@example.com", "long enough", InvalidInput),
        (None, "bob@example.com", "short", InvalidInput),
        (None, "BOB@example.com", "long enough", Conflict),
    ],
    ids=["unknown-org", "no-at", "space", "short-password", "same-email-other-case"],
)
async def test_create_user_refuses(app, org_id, email, password, error):
    org = await make_org(app)
    async with runtime_of(app).db.session(write=True) as session:
        await create_user(session, org.id, "bob@example.com", "long enough")
        with pytest.raises(error):
            await create_user(session, org_id or org.id, email, password)


async def test_users_create_reads_a_password_from_stdin(app, database_url):
    org = await make_org(app)
    made = ok_json(
        callplane(
            database_url,
            *("users", "create", "--org", str(org.id), "--password-stdin", "cy@example.com"),
            "--json",
            stdin="correct horse battery\n",
        )
    )
    assert made["password"] == "correct horse battery"
    async with browser_client(app) as c:
        assert (await sign_in(c, "cy@example.com", "correct horse battery")).status_code == 303


async def test_demo_prints_a_person_and_never_resets_a_changed_password(app, database_url):
    run = callplane(database_url, "demo")
    assert run.returncode == 0, run.stderr
    assert "http://127.0.0.1:8000/dashboard/" in run.stdout and DEMO_EMAIL in run.stdout
    password = run.stdout.split("password:")[1].split()[0]
    async with browser_client(app) as c:
        assert (await sign_in(c, DEMO_EMAIL, password)).status_code == 303

    runtime = runtime_of(app)
    # The CLI ran without CALLPLANE_SIGNING_KEY: the key it used is the one stored in the database.
    settings = runtime.settings.model_copy(update={"signing_key": None})
    async with runtime.db.session(write=True) as session:
        user = await find_user_by_email(session, DEMO_EMAIL)
        assert user is not None
        again = await ensure_demo_person(session, settings, user.organization_id)
        assert again.password == password  # idempotent: the same person and password
        person = await get_person(session, user.organization_id, user.id, 0)
        assert person is not None
        await change_password(session, person, password, "my own password")
        after = await ensure_demo_person(session, settings, user.organization_id)
        assert after.password is None  # not shown, and not reset
        await session.commit()
    async with browser_client(app) as c:
        assert (await sign_in(c, DEMO_EMAIL, password)).status_code == 401
        assert (await sign_in(c, DEMO_EMAIL, "my own password")).status_code == 303
