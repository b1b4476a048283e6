"""The vocabulary of the fixture document (docs/api-contract.md#the-fixture-document) that each
domain's ``fixtures`` module uses to contribute its sections: ``@section``, the load's context and
errors, item parsing and the JSON value policy worded as a fixture error. ``loader.py`` imports the
domains' sections and runs them; this module imports no domain, so the sections and the loader form
no circle."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import CallplaneError, InvalidInput
from callplane.kit.jsonvalues import check_value, is_plain
from callplane.settings import Settings

#: Sections in the order they are loaded; also the keys a document may have.
SECTION_ORDER = (
    "agents",
    "voices",
    "phone_numbers",
    "call_tags",
    "calls",
    "feedback",
    "external_calls",
    "call_recordings",
    "tables",
    "contacts",
)


class LoadError(CallplaneError):
    status_code = 422


@dataclass
class LoadContext:
    session: AsyncSession
    organization_id: int
    settings: Settings
    #: Free-form per-load memory for sections that refer to each other's items.
    memo: dict[str, Any] = field(default_factory=dict)


SectionLoader = Callable[[LoadContext, list[Any]], Awaitable[list[Any]]]
SECTIONS: dict[str, SectionLoader] = {}
#: Sections that screen their own items against the JSON value policy (``screened_items``).
SELF_SCREENING: set[str] = set()


def section(name: str, *, screens_items: bool = False) -> Callable[[SectionLoader], SectionLoader]:
    """Register a section's loader. ``screens_items``: the loader passes its items through
    ``screened_items`` itself (where it prepares them), so the document's screen leaves them out."""
    if name not in SECTION_ORDER:
        raise ValueError(f"unknown fixture section {name!r}")

    def register(loader: SectionLoader) -> SectionLoader:
        SECTIONS[name] = loader
        if screens_items:
            SELF_SCREENING.add(name)
        return loader

    return register


M = TypeVar("M", bound=BaseModel)


def parse_items(name: str, items: list[Any], model: type[M], first_index: int = 0) -> list[M]:
    """Validate every item of a section, naming the first bad one: ``voices[2].name: ...``.

    ``first_index``: the position of ``items[0]`` in the section, when validating a slice."""
    parsed = []
    for index, item in enumerate(items, first_index):
        try:
            parsed.append(model.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise LoadError(
                f"{name}[{index}]{'.' + where if where else ''}: {first['msg']}"
            ) from None
    return parsed


def policy_checked(value: Any, loc: tuple[str | int, ...] = (), depth: int = 0) -> Any:
    """``check_value``, with its error worded as a fixture error: ``calls[5].params.x: ...``."""
    try:
        return check_value(value, loc, depth)
    except InvalidInput as exc:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.loc[1:])
        raise LoadError(f"{where.lstrip('.')}: {exc.message}") from None


def screened_items(name: str, items: list[Any], first_index: int) -> list[Any]:
    """Items of a section (``items[0]`` at ``first_index`` in it) under the policy; LoadError
    for the first that breaks it. Pure: a worker process may run it."""
    if is_plain(items, depth=1):
        return items
    return [
        policy_checked(item, (name, index), depth=2)
        for index, item in enumerate(items, first_index)
    ]


def conflict(name: str, exc: IntegrityError) -> LoadError:
    return LoadError(f"{name}: conflicts with existing data ({exc.orig})")
