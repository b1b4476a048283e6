"""``POST /web_calls/tokens`` and ``POST /web_calls`` (docs/web-calls.md). Errors in the STATUS
shape, as the calls family's.

``POST /web_calls`` takes either an API key (a server, the dashboard) or a web call token (a
website's page) as its bearer. With a token, the request must come from the token's origin,
and only that origin is told it may read the answer (CORS); its preflight is answered for an
origin that a live token names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends
from starlette.requests import Request
from starlette.responses import Response

from callplane.errors import InvalidInput, Unauthorized, Unavailable
from callplane.http.deps import CurrentTenant, SessionDep, current_tenant, end_unit_of_work
from callplane.http.families import STATUS
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.http.unit_of_work import get_session
from callplane.kit.scopes import CALLS
from callplane.kit.tenancy import Tenant
from callplane.models.web_calls import WebCallToken
from callplane.runtime import Runtime
from callplane.web_calls import service
from callplane.web_calls.host import WebCallHost
from callplane.web_calls.schemas import (
    WebCallCreate,
    WebCallCreated,
    WebCallTokenCreate,
    WebCallTokenCreated,
)

router = family_router(STATUS, scopes=CALLS, tags=["web calls"])

#: What a page's request may carry (the token, JSON) and how long a browser may keep the answer.
PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Methods": "POST",
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Max-Age": "60",
    "Vary": "Origin",
}


@dataclass(frozen=True)
class WebCaller:
    tenant: Tenant | None = None
    token: WebCallToken | None = None


def _bearer(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    value = value.strip()
    return value if scheme.lower() == "bearer" and 0 < len(value) <= 512 else None


async def web_caller(request: Request) -> WebCaller:
    """An API key's organization, or a usable web call token (401 otherwise)."""
    runtime: Runtime = request.app.state.runtime
    bearer = _bearer(request)
    if bearer is not None and service.is_web_call_token(bearer):
        session = await get_session(request)
        try:
            token = await service.usable_token(session, bearer, request.headers.get("origin"))
        except Unauthorized:
            await runtime.limiter.count_auth_failure(
                request.client.host if request.client else "unknown"
            )
            raise
        return WebCaller(token=token)

    return WebCaller(tenant=await current_tenant(request))


@router.post(
    "/web_calls/tokens",
    response_model=WebCallTokenCreated,
    status_code=201,
    summary="A short-lived, single-use token a website starts one web call with",
)
async def create_web_call_token(
    body: WebCallTokenCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Mint a token for one web call with this agent, ref and params, usable only from
    ``allowed_origin``, once, within ``expires_in_seconds`` (at most 300). Hand it to the page;
    the page never holds an API key."""
    token, expires_at = await service.mint_token(session, tenant.organization_id, body)
    return json_response({"token": token, "expires_at": expires_at}, 201)


@router.post(
    "/web_calls",
    response_model=WebCallCreated,
    status_code=201,
    summary="Start a web call: a WebRTC offer in, the answer out",
    responses={503: {"description": "Web calls need the speech extra (aiortc, PyAV)"}},
)
async def create_web_call(
    body: WebCallCreate,
    request: Request,
    session: SessionDep,
    caller: Annotated[WebCaller, Depends(web_caller)],
) -> Response:
    """Answer the browser's SDP offer and hold the call: a Call with ``direction`` ``web``, the
    agent's conversation, recording, transcript, analysis, events and webhooks, as a phone
    call's. The bearer is an API key (``agent_id`` required) or a web call token (the token
    names the agent, ref and params; the body holds only ``sdp``)."""
    if caller.token is None:
        assert caller.tenant is not None
        if body.agent_id is None:
            raise InvalidInput("agent_id: required", loc=("body", "agent_id"), type_="missing")
        if body.agent_branch_name is not None and body.agent_commit_id is not None:
            raise InvalidInput(
                "agent_commit_id: give agent_branch_name or agent_commit_id, not both",
                loc=("body", "agent_commit_id"),
            )
        await service.check_agent(
            session,
            caller.tenant.organization_id,
            body.agent_id,
            body.agent_branch_name,
            body.agent_commit_id,
        )
        spec = service.WebCallSpec(
            caller.tenant.organization_id,
            body.agent_id,
            body.agent_branch_name,
            body.agent_commit_id,
            dict(body.params or {}),
        )
    else:
        for name in ("agent_id", "agent_branch_name", "agent_commit_id", "params"):
            if getattr(body, name) is not None:
                raise InvalidInput(f"{name}: set by the web call token", loc=("body", name))
        spec = service.spec_of_token(caller.token)
    # The call is written by the engine in a transaction of its own (it must be committed
    # before its conversation can move it): the request's session ends here.
    await end_unit_of_work(request, commit=True)
    try:
        from callplane.telephony import webrtc
    except ImportError:
        raise Unavailable("Web calls need callplane[speech] (aiortc and PyAV)", 60) from None
    try:
        webrtc.check_offer(body.sdp)
    except webrtc.BadOffer as bad:
        raise InvalidInput(f"sdp: {bad}", loc=("body", "sdp")) from None
    host: WebCallHost = request.app.state.web_calls
    runtime: Runtime = request.app.state.runtime
    try:
        connection = await webrtc.answer_offer(
            body.sdp,
            webrtc.parse_ice_servers(runtime.settings.ice_servers),
            call_ref=f"org {spec.organization_id}",
        )
    except webrtc.BadOffer as bad:
        raise InvalidInput(f"sdp: {bad}", loc=("body", "sdp")) from None
    try:
        call = await host.open_call(spec, connection)
    except BaseException:
        await connection.end("local")
        raise
    headers = None
    if caller.token is not None:
        headers = {"Access-Control-Allow-Origin": caller.token.allowed_origin, "Vary": "Origin"}
    return json_response({"call_id": call.id, "sdp": connection.answer_sdp}, 201, headers)


@router.options("/web_calls", include_in_schema=False)
async def web_call_preflight(request: Request, session: SessionDep) -> Response:
    origin = request.headers.get("origin")
    if origin and len(origin) <= 2048 and await service.origin_has_live_token(session, origin):
        return Response(
            status_code=204,
            headers={"Access-Control-Allow-Origin": origin, **PREFLIGHT_HEADERS},
        )
    return Response(status_code=204, headers={"Vary": "Origin"})
