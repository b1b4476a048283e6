"""Signing in and out, and the person's own account (password change)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from callplane.audit.requests import attribute
from callplane.dashboard.forms import fields
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import (
    CurrentPerson,
    dashboard_router,
    runtime_of,
    visit_of,
)
from callplane.dashboard.sessions import SessionState, new_state
from callplane.errors import InvalidInput, RateLimited
from callplane.http.deps import SessionDep
from callplane.users.service import authenticate, change_password, end_sessions

router = dashboard_router(area="self")


def _safe_next(request: Request, target: str | None) -> str:
    """Only a dashboard path of this site: ``next`` must not send anyone elsewhere."""
    base = request.scope.get("root_path", "")
    default = f"{base}/calls"
    if not target or not target.startswith(base + "/") or target.startswith("//"):
        return default
    if "\\" in target or any(ord(c) < 32 for c in target):
        return default
    return target


@router.get("/sign-in")
async def sign_in_page(request: Request, next: str | None = None) -> Response:  # noqa: A002
    return render(request, "sign_in.html", next=_safe_next(request, next), email="", error=None)


@router.post("/sign-in")
async def sign_in(request: Request, session: SessionDep) -> Response:
    form = await fields(request)
    email = form.get("email", "")[:320]
    password = form.get("password", "")
    target = _safe_next(request, form.get("next"))
    runtime = runtime_of(request)
    address = request.client.host if request.client else "unknown"
    # Per address (one machine guessing many accounts) and per account (many machines guessing
    # one): both count failures only, so signing in successfully is never slowed down.
    identities = [f"address:{address}", f"account:{email.strip().lower()}"]
    try:
        await runtime.limiter.guard_signin(identities)
    except RateLimited as exc:
        response = render(
            request,
            "sign_in.html",
            429,
            next=target,
            email=email,
            error=f"Too many failed attempts. Try again in {exc.retry_after} seconds.",
        )
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
    person = await authenticate(session, email, password)
    if person is None:
        await runtime.limiter.record_signin_failure(identities)
        return render(
            request,
            "sign_in.html",
            401,
            next=target,
            email=email,
            error="The email or password is not right.",
        )
    attribute(request.scope, person.organization_id, f"user:{person.email}")
    # A new token on sign-in: a token planted before sign-in is worth nothing after it.
    visit_of(request).replace(
        SessionState(new_state().csrf, person.organization_id, person.id, person.session_version)
    )
    return RedirectResponse(target, 303)


@router.post("/sign-out")
async def sign_out(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    await end_sessions(session, person)
    visit_of(request).replace(new_state())
    return RedirectResponse(f"{request.scope.get('root_path', '')}/sign-in", 303)


@router.get("/account")
async def account(request: Request, person: CurrentPerson, done: str | None = None) -> Response:
    return render(request, "account.html", section="account", error=None, done=bool(done))


@router.post("/account/password")
async def account_password(
    request: Request, session: SessionDep, person: CurrentPerson
) -> Response:
    form = await fields(request)
    if form.get("new_password", "") != form.get("confirm_password", ""):
        error: str | None = "The new passwords do not match."
    else:
        try:
            updated = await change_password(
                session, person, form.get("current_password", ""), form.get("new_password", "")
            )
        except InvalidInput as exc:
            error = exc.message
        else:
            # Every other session ends; this one continues under the new version.
            visit_of(request).replace(
                SessionState(
                    new_state().csrf,
                    updated.organization_id,
                    updated.id,
                    updated.session_version,
                )
            )
            base = request.scope.get("root_path", "")
            return RedirectResponse(f"{base}/account?done=1", 303)
    return render(request, "account.html", 422, section="account", error=error, done=False)
