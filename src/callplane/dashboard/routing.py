"""The dashboard's route class: session cookie, form policy, CSRF check, unit of work, errors.

Every dashboard route is built by ``DashboardRoute``, so no page can forget the CSRF check or
leave a write uncommitted: a request's body is bounded as it is read by its page's form policy
(``dashboard.forms``: 1 MB of text, or the page's files); a POST whose token does not match the
session's is refused before the handler runs; the request's database session (the same unit of
work as the API's) is committed when the page answers below 400 and rolled back otherwise;
domain errors become HTML error pages (another organization's resource is the same 404 page as
a missing one).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import Receive, Scope, Send

from callplane.audit.requests import attribute, open_event
from callplane.dashboard import forms
from callplane.dashboard.rendering import render
from callplane.dashboard.sessions import (
    COOKIE,
    COOKIE_PATH,
    CSRF_FIELD,
    CSRF_HEADER,
    SessionState,
    csrf_matches,
    new_state,
)
from callplane.errors import CallplaneError, Forbidden, RateLimited
from callplane.http.body import bounded_receive, check_declared
from callplane.http.deps import UNIT_OF_WORK, SessionDep, end_unit_of_work
from callplane.runtime import Runtime
from callplane.users.roles import may
from callplane.users.service import Person, get_person

log = logging.getLogger("callplane.dashboard")


class SignInRequired(Exception):
    pass


class CsrfRefused(Exception):
    pass


@dataclass
class Visit:
    """The session of this request; ``dirty`` when the cookie must be (re)issued."""

    state: SessionState
    dirty: bool = False

    def replace(self, state: SessionState) -> None:
        self.state = state
        self.dirty = True


def visit_of(request: Request) -> Visit:
    visit: Visit = request.state.visit
    return visit


def runtime_of(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def _check_csrf(request: Request, visit: Visit, policy: forms.FormPolicy) -> None:
    check_declared(request, policy.max_bytes)
    if policy.max_files and visit.state.user_id is None:
        # Nobody signed in can send a file: refused before megabytes are read for nothing.
        raise SignInRequired
    # Parsed here whether or not the token came in a header, so the page reads a form parsed
    # under its own policy (files or not).
    form = await forms.read(request, policy)
    sent = request.headers.get(CSRF_HEADER)
    if sent is None:
        value = form.get(CSRF_FIELD)
        sent = value if isinstance(value, str) else None
    if not csrf_matches(visit.state, sent):
        raise CsrfRefused


def _error_page(request: Request, status_code: int, title: str, message: str) -> Response:
    response = render(request, "error.html", status_code, title=title, message=message)
    if status_code == 429 and isinstance(getattr(request.state, "error", None), RateLimited):
        response.headers["Retry-After"] = str(request.state.error.retry_after)
    return response


def _sign_in_redirect(request: Request) -> Response:
    base = request.scope.get("root_path", "")
    target = request.url.path
    if request.url.query:
        target += "?" + request.url.query
    return RedirectResponse(f"{base}/sign-in?next={quote(target, safe='')}", 303)


_TITLES = {
    413: "Too large",
    404: "Not found",
    403: "Not allowed",
    409: "Conflict",
    422: "Invalid input",
    429: "Too many attempts",
}


class DashboardRoute(APIRoute):
    #: which part of the dashboard its pages are, for the roles (``users.roles``)
    area = "general"

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        # Every change through the dashboard is an audit event, as through the API.
        changes = not (self.methods or set()) <= {"GET", "HEAD"}
        self.audit_action = f"dashboard.{endpoint.__name__}" if changes else None
        self.audit_resource_type = endpoint.__module__.rsplit(".", 1)[-1]
        self.form_policy = forms.policy_of(endpoint)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Whoever reads the body (the form parser), it stops at the page's limit.
        await super().handle(scope, bounded_receive(receive, self.form_policy.max_bytes), send)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        route = self

        async def handle(request: Request) -> Response:
            open_event(request, route.audit_action, route.audit_resource_type)
            runtime = runtime_of(request)
            codec = request.app.state.dashboard.codec
            state = await codec.read(runtime.db, request.cookies.get(COOKIE))
            visit = Visit(state or new_state(), dirty=state is None)
            request.state.visit = visit
            request.scope[UNIT_OF_WORK] = True
            try:
                if request.method not in ("GET", "HEAD"):
                    await _check_csrf(request, visit, route.form_policy)
                response = await handler(request)
            except SignInRequired:
                response = _sign_in_redirect(request)
            except CsrfRefused:
                response = _error_page(
                    request,
                    403,
                    "Form expired",
                    "This form was missing its security token or it no longer matches your "
                    "session. Reload the page and try again.",
                )
            except CallplaneError as exc:
                request.state.error = exc
                status = exc.status_code if exc.status_code != 500 else 400
                response = _error_page(request, status, _TITLES.get(status, "Error"), exc.message)
            except RequestValidationError as exc:
                # A malformed id in a path names nothing: the same page as a missing resource.
                in_path = any(e.get("loc", ("",))[0] == "path" for e in exc.errors())
                status = 404 if in_path else 422
                message = "No such page." if in_path else "Some of the values sent are invalid."
                response = _error_page(request, status, _TITLES[status], message)
            except BaseException:
                await end_unit_of_work(request, commit=False)
                raise
            finally:
                await request.close()  # an uploaded file's spooled copy
            await end_unit_of_work(request, commit=response.status_code < 400)
            if visit.dirty:
                response.set_cookie(
                    COOKIE,
                    await codec.dump(runtime.db, visit.state),
                    path=COOKIE_PATH,
                    httponly=True,
                    samesite="lax",
                    secure=codec.secure,
                )
            return response

        return handle


def dashboard_router(area: str = "general") -> APIRouter:
    """A router of dashboard pages in ``area`` (``users.roles``: ``keys``, ``users``, ``audit``,
    ``self`` for a person's own account, ``general`` for the rest)."""
    if area == "general":
        return APIRouter(route_class=DashboardRoute)
    in_area = type(f"{area.title()}DashboardRoute", (DashboardRoute,), {"area": area})
    return APIRouter(route_class=in_area)


async def current_person(request: Request, session: SessionDep) -> Person:
    """The signed-in person; anyone else is sent to the sign-in page."""
    visit = visit_of(request)
    state = visit.state
    person = None
    if state.user_id is not None:
        assert state.organization_id is not None and state.version is not None
        person = await get_person(session, state.organization_id, state.user_id, state.version)
        if person is None:  # signed out elsewhere, password changed, or the person is gone
            visit.replace(new_state())
    if person is None:
        raise SignInRequired
    area: str = getattr(request.scope.get("route"), "area", "general")
    if not may(person.role, area, request.method):
        raise Forbidden(f"Your role ({person.role}) does not allow this.")
    attribute(request.scope, person.organization_id, f"user:{person.email}")
    request.state.person = person
    return person


CurrentPerson = Annotated[Person, Depends(current_person)]
