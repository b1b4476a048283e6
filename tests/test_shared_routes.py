"""Apps built in one process share their routes (``http.shared_routes``), and each request still
reaches the runtime of the app that received it."""

from __future__ import annotations

from tests.conftest import client_for
from tests.factories import make_org


async def test_two_apps_share_their_routes_yet_each_request_meets_its_own_app(make_app):
    strict = await make_app(rate_limit="2/minute")
    lenient = await make_app()
    assert [route for route in strict.router.routes if route in lenient.router.routes]
    org = await make_org(strict)

    async with client_for(strict) as a, client_for(lenient) as b:
        on_strict = [(await a.get("/v1/calls", headers=org.headers)).status_code for _ in range(3)]
        on_lenient = [(await b.get("/v1/calls", headers=org.headers)).status_code for _ in range(3)]
        page = await b.get("/dashboard/sign-in")

    assert on_strict == [200, 200, 429]  # the strict app's own limiter
    assert on_lenient == [200, 200, 200]
    assert page.status_code == 200 and "<form" in page.text
