"""The fixture document of DESIGN §8, loaded in one transaction.

Each domain contributes the sections it owns with ``@section("name")`` in its ``fixtures``
module; sections run in dependency order (agents before the numbers that route to them, calls
before their feedback). A section validates its items, inserts them, and returns the ids it
created, in document order. Any invalid item aborts the whole load with a ``LoadError``.

Small sections go through the ORM. A section that can be large (calls: an imported history of
hundreds of thousands) writes with ``callplane.bulk.BulkInsert`` instead, a chunk of items at a
time so memory does not grow with the document.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ValidationError
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import CallplaneError, InvalidInput
from callplane.jsonvalues import check_value, is_plain
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
_SECTIONS: dict[str, SectionLoader] = {}
#: Sections that screen their own items against the JSON value policy (``screened_items``).
_SELF_SCREENING: set[str] = set()


def section(name: str, *, screens_items: bool = False) -> Callable[[SectionLoader], SectionLoader]:
    """Register a section's loader. ``screens_items``: the loader passes its items through
    ``screened_items`` itself (where it prepares them), so the document's screen leaves them out."""
    if name not in SECTION_ORDER:
        raise ValueError(f"unknown fixture section {name!r}")

    def register(loader: SectionLoader) -> SectionLoader:
        _SECTIONS[name] = loader
        if screens_items:
            _SELF_SCREENING.add(name)
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


def _import_sections() -> None:
    """The modules that register sections, listed here. Imported on first use rather than at
    the top: each of them imports this module for ``@section``."""
    from callplane.call_tags import fixtures as call_tags
    from callplane.calls import fixtures as calls
    from callplane.contacts import fixtures as contacts
    from callplane.custom_data import fixtures as custom_data
    from callplane.external_calls import fixtures as external_calls
    from callplane.feedback import fixtures as feedback
    from callplane.orgs import fixtures as orgs
    from callplane.phone_numbers import fixtures as phone_numbers
    from callplane.voices import fixtures as voices

    registering = (orgs, voices, phone_numbers, call_tags, calls, feedback, external_calls)
    assert all((*registering, contacts, custom_data))


async def load_document(
    session: AsyncSession, settings: Settings, organization_id: int, document: Any
) -> dict[str, list[Any]]:
    """Load a document for one organization; flushes but does not commit."""
    _import_sections()
    if not isinstance(document, dict):
        raise LoadError("the fixture document must be a JSON object")
    document = _screened(document)
    unknown = sorted(set(document) - set(SECTION_ORDER))
    if unknown:
        raise LoadError(f"unknown sections: {', '.join(unknown)}")
    context = LoadContext(session=session, organization_id=organization_id, settings=settings)
    created: dict[str, list[Any]] = {}
    for name in SECTION_ORDER:
        if name not in document:
            continue
        items = document[name]
        if not isinstance(items, list):
            raise LoadError(f"{name} must be a list")
        loader = _SECTIONS.get(name)
        if loader is None:
            raise LoadError(f"section {name} is not supported yet")
        try:
            created[name] = await loader(context, items)
            await session.flush()
        except IntegrityError as exc:
            _screen_whole(document)
            raise conflict(name, exc) from None
        except LoadError:
            _screen_whole(document)
            raise
    return created


# The JSON value policy of request bodies holds for fixture documents too, and a value breaking
# it is the document's error whatever else is wrong. Screening a large document takes a walk of
# every value (a second for 300,000 calls): a section registered with ``screens_items`` (calls)
# screens its items part by part where it prepares them (in the loader's workers), and the whole
# document is screened only when another error is about to be reported, so the first violation
# still comes first.


def _screened(document: dict[str, Any]) -> dict[str, Any]:
    """The document under the policy, but for the items of sections that screen their own."""
    own: dict[str, list[Any]] = {
        name: [] for name in _SELF_SCREENING if type(document.get(name)) is list
    }
    rest = {**document, **own} if own else document
    if is_plain(rest):
        return document
    return cast(dict[str, Any], _policy_checked(document))


def _screen_whole(document: dict[str, Any]) -> None:
    """Raise the document's first violation of the policy, if it has one."""
    if not is_plain(document):
        _policy_checked(document)


def _policy_checked(value: Any, loc: tuple[str | int, ...] = (), depth: int = 0) -> Any:
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
        _policy_checked(item, (name, index), depth=2)
        for index, item in enumerate(items, first_index)
    ]


def conflict(name: str, exc: IntegrityError) -> LoadError:
    return LoadError(f"{name}: conflicts with existing data ({exc.orig})")
