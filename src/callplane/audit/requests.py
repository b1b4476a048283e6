"""What a request leaves in the audit log, decided in one place for every route.

A family route knows at start-up whether its requests are audited (``audit_action_for``): every
route that changes something (any method but GET and HEAD), and the reads marked
``@audited_read`` (recordings, contact data). The request pipeline opens the request's pending
event (``open_event``); authentication names the actor and organization (``attribute``); the
unit of work appends it to the chain in the transaction it commits (``settle``), so the change
and its event are committed together or not at all. A request answered with an error records
nothing: its transaction is rolled back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from callplane.audit.chain import Event, append
from callplane.kit.driver import Db
from callplane.models.base import utcnow

_PENDING = "callplane.audit"
_READ_ACTION = "__callplane_audited_read__"
_READ_METHODS = frozenset({"GET", "HEAD"})
#: The longest resource id kept (a custom-data table name and record id fit many times).
_RESOURCE_ID_MAX = 300

EndpointT = TypeVar("EndpointT", bound=Callable[..., Any])


def audited_read(action: str) -> Callable[[EndpointT], EndpointT]:
    """Record every successful request of this read route as ``action``."""

    def mark(endpoint: EndpointT) -> EndpointT:
        setattr(endpoint, _READ_ACTION, action)
        return endpoint

    return mark


def resource_type_for(tags: Sequence[Any]) -> str:
    return str(tags[0]).replace(" ", "_") if tags else "api"


def audit_action_for(
    endpoint: Callable[..., Any], methods: Iterable[str], tags: Sequence[Any]
) -> str | None:
    """The action a route's requests are recorded as, or None for a read that is not audited."""
    read: str | None = getattr(endpoint, _READ_ACTION, None)
    if read is not None:
        return read
    if set(methods) <= _READ_METHODS:
        return None
    return f"{resource_type_for(tags)}.{endpoint.__name__}"


@dataclass(slots=True)
class Pending:
    action: str
    resource_type: str
    resource_id: str | None
    ip: str | None
    request_id: str | None
    organization_id: int | None = None
    actor: str | None = None
    settled: bool = False
    dropped: bool = False


def _resource_id(path_params: dict[str, Any]) -> str | None:
    if not path_params:
        return None
    return "/".join(str(value) for value in path_params.values())[:_RESOURCE_ID_MAX]


def open_event(request: Request, action: str | None, resource_type: str) -> None:
    if action is None:
        return
    scope = request.scope
    state = scope.get("state") or {}
    client = scope.get("client")
    scope[_PENDING] = Pending(
        action=action,
        resource_type=resource_type,
        resource_id=_resource_id(scope.get("path_params") or {}),
        ip=client[0] if client else None,
        request_id=state.get("request_id"),
    )


def is_audited(scope: Scope) -> bool:
    return _PENDING in scope


def attribute(scope: Scope, organization_id: int, actor: str) -> None:
    """Who made the request (``api_key:<id>``, ``user:<email>``, ``system``), for its event."""
    pending: Pending | None = scope.get(_PENDING)
    if pending is not None:
        pending.organization_id = organization_id
        pending.actor = actor


def name_resource(scope: Scope, resource_id: str) -> None:
    pending: Pending | None = scope.get(_PENDING)
    if pending is not None:
        pending.resource_id = resource_id[:_RESOURCE_ID_MAX]


def _created_id(body: bytes) -> str | None:
    """The id of what a 201 created: ``id`` at the top of the answer or of its one envelope."""
    try:
        document = json.loads(body)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    for candidate in (document, *(v for v in document.values() if isinstance(v, dict))):
        found = candidate.get("id", candidate.get("call_id"))
        if isinstance(found, str | int) and not isinstance(found, bool):
            return str(found)
    return None


def note_response(scope: Scope, response: Response) -> None:
    """Called with the handler's answer, before the unit of work commits."""
    pending: Pending | None = scope.get(_PENDING)
    if pending is None:
        return
    if response.status_code >= 400:
        pending.dropped = True
    elif response.status_code == 201 and pending.resource_id is None:
        body = getattr(response, "body", None)
        if isinstance(body, bytes):
            pending.resource_id = _created_id(body)


async def settle(scope: Scope, db: Db) -> None:
    """Append the request's event in ``db``'s transaction, which is about to commit."""
    pending: Pending | None = scope.get(_PENDING)
    if pending is None or pending.settled or pending.dropped:
        return
    if pending.organization_id is None or pending.actor is None:
        return  # nobody was authenticated: nothing was changed on anyone's behalf
    await append(
        db,
        Event(
            organization_id=pending.organization_id,
            at=utcnow(),
            actor=pending.actor,
            action=pending.action,
            resource_type=pending.resource_type,
            resource_id=pending.resource_id,
            ip=pending.ip,
            request_id=pending.request_id,
        ),
    )
    pending.settled = True
