"""Dashboard roles (``docs/privacy.md``): what each may do, decided here for every page.

Each dashboard router declares the area its pages belong to (``dashboard_router(area=...)``);
the dashboard's one sign-in check (``dashboard.routing.current_person``) asks ``may`` before any
page runs.

- ``owner`` and ``admin``: everything;
- ``member``: everything but API keys, people and the audit log;
- ``viewer``: what a member may see, and changes nothing.

Every role may sign out and change its own password (area ``self``).
"""

from __future__ import annotations

from callplane.errors import InvalidInput

ROLES: tuple[str, ...] = ("owner", "admin", "member", "viewer")
#: Areas only owners and admins reach.
_GOVERNANCE = frozenset({"keys", "users", "audit"})
_READS = frozenset({"GET", "HEAD"})


def check_role(role: str) -> str:
    if role not in ROLES:
        raise InvalidInput(f"Unknown role {role!r}; one of: {', '.join(ROLES)}", loc=("role",))
    return role


def may(role: str, area: str, method: str) -> bool:
    if area == "self" or role in ("owner", "admin"):
        return True
    if area in _GOVERNANCE:
        return False
    return role == "member" or method in _READS
