"""API key scopes: what a key may do, and what each route asks of it (``docs/privacy.md``).

A route's scope is declared once, by its router (``family_router(..., scopes=RouteScopes(...))``:
its reads need the read scope, everything else the write scope) or, for the odd route whose
method says the wrong thing (a search sent as POST), by ``@needs_scope`` on its endpoint. The
request pipeline checks it right after authentication (``http.deps.current_tenant``); no
handler checks a scope itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from callplane.errors import InvalidInput

#: Every scope a key can hold; ``*`` holds them all (and is what keys made before scopes hold).
SCOPES: tuple[str, ...] = (
    "calls:read",
    "calls:write",
    "agents:read",
    "agents:write",
    "campaigns:read",
    "campaigns:write",
    "contacts:read",
    "contacts:write",
    "data:read",
    "data:write",
    "numbers:write",
    "webhooks:write",
    "keys:write",
    "audit:read",
)
ALL = "*"
_KNOWN = frozenset((*SCOPES, ALL))

_READ_METHODS = frozenset({"GET", "HEAD"})
_NEEDS = "__callplane_needs_scope__"

EndpointT = TypeVar("EndpointT", bound=Callable[..., Any])


@dataclass(frozen=True)
class RouteScopes:
    """The scopes a router's routes need: ``read`` for GET, ``write`` for the rest. ``None`` for
    both marks a router whose routes take no API key at all (signed recording URLs)."""

    read: str | None
    write: str | None

    def __post_init__(self) -> None:
        for name in (self.read, self.write):
            if name is not None and name not in SCOPES:
                raise ValueError(f"unknown scope {name!r}")

    def for_route(self, methods: Iterable[str], endpoint: Callable[..., Any]) -> str | None:
        declared: str | None = getattr(endpoint, _NEEDS, None)
        if declared is not None:
            return declared
        return self.read if set(methods) <= _READ_METHODS else self.write


#: The routes that take no key (a signed URL is their credential).
KEYLESS = RouteScopes(read=None, write=None)


def needs_scope(name: str) -> Callable[[EndpointT], EndpointT]:
    """Give one endpoint another scope than its method implies (e.g. a query sent as POST)."""
    if name not in SCOPES:
        raise ValueError(f"unknown scope {name!r}")

    def mark(endpoint: EndpointT) -> EndpointT:
        setattr(endpoint, _NEEDS, name)
        return endpoint

    return mark


def parse_scopes(names: Iterable[str]) -> frozenset[str]:
    """The scopes asked for, or a 422 naming every one that does not exist."""
    asked = list(names)
    unknown = [name for name in asked if name not in _KNOWN]
    if unknown:
        raise InvalidInput(
            "Unknown scopes: " + ", ".join(repr(name) for name in unknown),
            loc=("body", "scopes"),
        )
    if not asked:
        raise InvalidInput("scopes must name at least one scope", loc=("body", "scopes"))
    return frozenset((ALL,)) if ALL in asked else frozenset(asked)


def grants(held: frozenset[str], needed: str) -> bool:
    return ALL in held or needed in held


def covers(held: frozenset[str], asked: frozenset[str]) -> bool:
    """Whether a key holding ``held`` may hand out ``asked`` (never more than it has)."""
    return ALL in held or (ALL not in asked and asked <= held)


def stored(scopes: frozenset[str]) -> str:
    """Scopes as the ``api_keys.scopes`` column keeps them: sorted, space-separated."""
    return " ".join(sorted(scopes))


def loaded(column: str | None) -> frozenset[str]:
    return frozenset((column or ALL).split())


# What each router declares (one line per router, beside its family).
CALLS = RouteScopes(read="calls:read", write="calls:write")
AGENTS = RouteScopes(read="agents:read", write="agents:write")
CONTACTS = RouteScopes(read="contacts:read", write="contacts:write")
DATA = RouteScopes(read="data:read", write="data:write")
CAMPAIGNS = RouteScopes(read="campaigns:read", write="campaigns:write")
#: Numbers, webhooks and keys have one scope each, for reading too: a webhook endpoint shows its
#: signing secret, a number decides where calls go, a key list shows who holds access.
NUMBERS = RouteScopes(read="numbers:write", write="numbers:write")
WEBHOOKS = RouteScopes(read="webhooks:write", write="webhooks:write")
KEYS = RouteScopes(read="keys:write", write="keys:write")
AUDIT = RouteScopes(read="audit:read", write="audit:read")
