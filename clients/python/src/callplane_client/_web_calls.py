"""Web calls (docs/web-calls.md): a server mints single-use tokens for its web pages, or starts a
web call itself from a WebRTC offer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callplane_client._resources import _drop_none, _one, _Resource
from callplane_client._transport import Request
from callplane_client.models import WebCall, WebCallToken


def _ref(
    agent_id: str | None,
    agent_branch_name: str | None,
    agent_commit_id: str | None,
    params: Mapping[str, Any] | None,
) -> dict[str, Any]:
    return _drop_none(
        {
            "agent_id": agent_id,
            "agent_branch_name": agent_branch_name,
            "agent_commit_id": agent_commit_id,
            "params": dict(params) if params is not None else None,
        }
    )


class WebCalls(_Resource):
    def create_token(
        self,
        agent_id: str,
        allowed_origin: str,
        *,
        agent_branch_name: str | None = None,
        agent_commit_id: str | None = None,
        params: Mapping[str, Any] | None = None,
        expires_in_seconds: int | None = None,
    ) -> WebCallToken:
        """A token the page at ``allowed_origin`` starts one web call with: the page never
        holds an API key."""
        body = _ref(agent_id, agent_branch_name, agent_commit_id, params)
        body.update(
            _drop_none({"allowed_origin": allowed_origin, "expires_in_seconds": expires_in_seconds})
        )
        return self._send(  # type: ignore[no-any-return]
            Request("POST", "/v1/web_calls/tokens", _one(WebCallToken), json=body)
        )

    def create(
        self,
        sdp: str,
        agent_id: str,
        *,
        agent_branch_name: str | None = None,
        agent_commit_id: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> WebCall:
        """Start a web call from a WebRTC offer; the answer's ``sdp`` goes back to the peer."""
        body = _ref(agent_id, agent_branch_name, agent_commit_id, params)
        body["sdp"] = sdp
        return self._send(Request("POST", "/v1/web_calls", _one(WebCall), json=body))  # type: ignore[no-any-return]
