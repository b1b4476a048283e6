"""API keys with scopes, and the audit log (docs/privacy.md)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from callplane_client._model import Model
from callplane_client._resources import _drop_none, _one, _page, _Resource, _segment
from callplane_client._transport import Request
from callplane_client.models import Page, Result


class ApiKey(Model):
    id: int
    name: str
    scopes: list[str]
    expires_at: str | None
    created_at: str
    revoked_at: str | None
    key: str | None  # only in the answer to api_keys.create


class AuditEvent(Model):
    id: int
    at: str
    actor: str
    action: str
    resource_type: str
    resource_id: str | None
    ip: str | None
    request_id: str | None
    hash: str


class ApiKeys(_Resource):
    def create(self, name: str, scopes: Sequence[str], expires_at: str | None = None) -> ApiKey:
        """A key holding ``scopes`` (at most those of the key calling); ``key`` is shown once."""
        body = _drop_none({"name": name, "scopes": list(scopes), "expires_at": expires_at})
        return self._send(Request("POST", "/v1/api_keys", _one(ApiKey, "api_key"), json=body))  # type: ignore[no-any-return]

    def list(self, page: int = 1, page_size: int = 20) -> Page[ApiKey]:
        params = {"page": page, "page_size": page_size}
        return self._send(Request("GET", "/v1/api_keys", _page(ApiKey, "api_keys"), params))  # type: ignore[no-any-return]

    def delete(self, id: int) -> Result:  # noqa: A002
        return self._send(Request("DELETE", f"/v1/api_keys/{_segment(id)}", _one(Result)))  # type: ignore[no-any-return]


class AuditLog(_Resource):
    def list(
        self,
        page: int = 1,
        page_size: int = 50,
        *,
        actor: str | None = None,
        action: str | None = None,
        resource_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> Page[AuditEvent]:
        """Events newest first, filtered (scope ``audit:read``)."""
        params = _drop_none(
            {
                "page": page,
                "page_size": page_size,
                "actor": actor,
                "action": action,
                "resource_id": resource_id,
                "since": since,
                "until": until,
            }
        )
        return self._send(Request("GET", "/v1/audit_log", _page(AuditEvent, "events"), params))  # type: ignore[no-any-return]

    def iter(self, page_size: int = 100, **filters: str) -> Iterator[AuditEvent]:
        return self._walk(lambda page: self.list(page=page, page_size=page_size, **filters))
