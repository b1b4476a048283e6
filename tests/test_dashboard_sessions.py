"""Dashboard sign-in over HTTP: cookie flags, CSRF, rate limits, sign-out, the API untouched."""

from __future__ import annotations

from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.factories import make_org


async def test_sign_in_sets_a_locked_down_cookie_and_opens_pages(app):
    org = await make_org(app)
    person = await make_person(app, org)
    async with browser_client(app) as c:
        r = await c.get("/dashboard/keys")
        assert r.status_code == 303
        assert r.headers["location"] == "/dashboard/sign-in?next=%2Fdashboard%2Fkeys"
        r = await sign_in(c, person.email.upper(), person.password)
        assert r.status_code == 303 and r.headers["location"] == "/dashboard/calls"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/dashboard" in cookie
        r = await c.get("/dashboard/keys")
        assert r.status_code == 200 and person.email in r.text
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
        assert r.headers["cache-control"] == "no-store"


async def test_the_api_sets_no_cookie_and_ignores_the_dashboards(app):
    org = await make_org(app)
    person = await make_person(app, org)
    async with browser_client(app) as c:
        await sign_in(c, person.email, person.password)
        r = await c.get("/v1/voices")  # the session cookie is not an API credential
        assert r.status_code == 401
        r = await c.get("/v1/voices", headers=org.headers)
        assert r.status_code == 200 and "set-cookie" not in r.headers


async def test_a_form_without_its_csrf_token_changes_nothing(app):
    org = await make_org(app)
    person = await make_person(app, org)
    async with browser_client(app) as c:
        await sign_in(c, person.email, person.password)
        r = await c.post("/dashboard/keys", data={"name": "sneaky"})
        assert r.status_code == 403 and "security token" in r.text
        r = await c.post("/dashboard/keys", data={"name": "sneaky", "csrf_token": "forged"})
        assert r.status_code == 403
        r = await c.get("/dashboard/keys")
        assert "sneaky" not in r.text
        r = await c.post("/dashboard/keys", data={"name": "real", "csrf_token": csrf_of(r)})
        assert r.status_code == 303
        r = await c.get(r.headers["location"])
        assert r.status_code == 200 and "shown only this once" in r.text


async def test_sign_in_with_a_token_from_before_is_refused(app):
    org = await make_org(app)
    person = await make_person(app, org)
    async with browser_client(app) as c:
        r = await c.post(
            "/dashboard/sign-in", data={"email": person.email, "password": person.password}
        )
        assert r.status_code == 403


async def test_sign_out_ends_the_session_even_for_a_copied_cookie(app):
    org = await make_org(app)
    person = await make_person(app, org)
    async with browser_client(app) as c:
        await sign_in(c, person.email, person.password)
        page = await c.get("/dashboard/keys")
        stolen = dict(c.cookies)
        r = await c.post("/dashboard/sign-out", data={"csrf_token": csrf_of(page)})
        assert r.status_code == 303
    async with browser_client(app) as other:
        other.cookies.update(stolen)
        r = await other.get("/dashboard/keys")
        assert r.status_code == 303 and "/sign-in" in r.headers["location"]


async def test_failed_sign_ins_are_limited_per_address_and_per_account(make_app):
    app = await make_app(signin_limit="2/minute")
    org = await make_org(app)
    victim = await make_person(app, org)
    other = await make_person(app, org)
    # Per account: two failures from two addresses lock the account for everyone.
    for address in ("10.0.0.1", "10.0.0.2"):
        async with browser_client(app, address) as c:
            r = await sign_in(c, victim.email, "wrong password")
            assert r.status_code == 401 and "not right" in r.text
    async with browser_client(app, "10.0.0.3") as c:
        r = await sign_in(c, victim.email, victim.password)
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        # ...while another account still signs in from that address.
        r = await sign_in(c, other.email, other.password)
        assert r.status_code == 303
    # Per address: failures on two accounts lock the address out, whatever account it tries.
    async with browser_client(app, "10.0.0.9") as c:
        for email in ("nobody@example.com", "ghost@example.com"):
            assert (await sign_in(c, email, "guess")).status_code == 401
        r = await sign_in(c, other.email, other.password)
        assert r.status_code == 429


async def test_changing_the_password_signs_out_other_sessions(app):
    org = await make_org(app)
    person = await make_person(app, org)
    async with browser_client(app) as first, browser_client(app) as second:
        await sign_in(first, person.email, person.password)
        await sign_in(second, person.email, person.password)
        page = await first.get("/dashboard/account")
        r = await first.post(
            "/dashboard/account/password",
            data={
                "csrf_token": csrf_of(page),
                "current_password": person.password,
                "new_password": "a much better password",
                "confirm_password": "a much better password",
            },
        )
        assert r.status_code == 303
        r = await first.get(r.headers["location"])
        assert r.status_code == 200 and "Password changed" in r.text
        assert (await first.get("/dashboard/keys")).status_code == 200
        assert (await second.get("/dashboard/keys")).status_code == 303
    async with browser_client(app) as c:
        assert (await sign_in(c, person.email, person.password)).status_code == 401
        assert (await sign_in(c, person.email, "a much better password")).status_code == 303


async def test_next_never_leaves_the_dashboard(app):
    org = await make_org(app)
    person = await make_person(app, org)
    async with browser_client(app) as c:
        page = await c.get("/dashboard/sign-in?next=https://evil.example/")
        r = await c.post(
            "/dashboard/sign-in",
            data={
                "email": person.email,
                "password": person.password,
                "csrf_token": csrf_of(page),
                "next": "//evil.example/dashboard/",
            },
        )
        assert r.headers["location"] == "/dashboard/calls"
