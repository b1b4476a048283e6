"""Every route of the OpenAPI document is guarded by the scope it declares: a key holding every
scope but that one is refused (403 naming it), a key holding only that one is let through.
One check in the request pipeline does it (``http.deps.current_tenant``), so a route added
later is covered by declaring its router's scopes."""

from __future__ import annotations

import re
from typing import Any

from callplane.kit.scopes import SCOPES
from tests.api_keys_support import scoped_key
from tests.factories import make_org

_VALUES = {
    "uuid": "00000000-0000-4000-8000-000000000000",
    "id": "1",
    "commit_id": "0" * 40,
    "name": "main",
    "table_name": "things",
    "contact_id": "c1",
    "token": "tok",
    "recording_id": "r1",
    "delivery_id": "1",
}


def _url(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: _VALUES.get(m.group(1), "x"), path)


def _guarded(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    routes = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            scope = operation.get("x-callplane-scope")
            if scope is None:
                # Only the signed recording URL takes no key; anything else must declare one.
                assert "security" not in operation or operation["security"] == [], (method, path)
                assert path == "/v1/recordings/{recording_id}/audio", (method, path)
                continue
            assert scope in SCOPES, (method, path, scope)
            routes.append((method.upper(), path, scope))
    return routes


async def test_every_route_is_guarded_by_its_declared_scope(app, client):
    org = await make_org(app)
    document = (await client.get("/v1/openapi.json")).json()
    routes = _guarded(document)
    assert len(routes) > 60
    all_but = {
        scope: await scoped_key(app, org, [s for s in SCOPES if s != scope]) for scope in SCOPES
    }
    only = {scope: await scoped_key(app, org, [scope]) for scope in SCOPES}
    for method, path, scope in routes:
        url = _url(path)
        body = {} if method in {"POST", "PUT", "PATCH"} else None
        refused = await client.request(
            method, url, headers={"Authorization": f"Bearer {all_but[scope]}"}, json=body
        )
        assert refused.status_code == 403, (method, path, refused.status_code, refused.text)
        assert f"lacks the scope {scope}" in refused.text, (method, path)
        allowed = await client.request(
            method, url, headers={"Authorization": f"Bearer {only[scope]}"}, json=body
        )
        assert allowed.status_code not in (401, 403), (method, path, allowed.text)
