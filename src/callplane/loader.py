"""The fixture document of docs/api-contract.md#the-fixture-document, loaded in one transaction.

Each domain contributes the sections it owns with ``@section("name")`` in its ``fixtures``
module; sections run in dependency order (agents before the numbers that route to them, calls
before their feedback). A section validates its items, inserts them, and returns the ids it
created, in document order. Any invalid item aborts the whole load with a ``LoadError``.

Small sections go through the ORM. A section that can be large (calls: an imported history of
hundreds of thousands) writes with ``callplane.kit.bulk.BulkInsert`` instead, a chunk of items at a
time so memory does not grow with the document.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

# Each domain's fixtures module registers its sections when imported.
from callplane.call_tags import fixtures as _call_tags  # noqa: F401
from callplane.calls import fixtures as _calls  # noqa: F401
from callplane.contacts import fixtures as _contacts  # noqa: F401
from callplane.custom_data import fixtures as _custom_data  # noqa: F401
from callplane.external_calls import fixtures as _external_calls  # noqa: F401
from callplane.feedback import fixtures as _feedback  # noqa: F401
from callplane.fixtures import (
    SECTION_ORDER,
    SECTIONS,
    SELF_SCREENING,
    LoadContext,
    LoadError,
    conflict,
    policy_checked,
)
from callplane.kit.jsonvalues import is_plain
from callplane.orgs import fixtures as _orgs  # noqa: F401
from callplane.phone_numbers import fixtures as _phone_numbers  # noqa: F401
from callplane.settings import Settings
from callplane.voices import fixtures as _voices  # noqa: F401

__all__ = ["LoadError", "load_document"]


async def load_document(
    session: AsyncSession, settings: Settings, organization_id: int, document: Any
) -> dict[str, list[Any]]:
    """Load a document for one organization; flushes but does not commit."""
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
        loader = SECTIONS.get(name)
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
        name: [] for name in SELF_SCREENING if type(document.get(name)) is list
    }
    rest = {**document, **own} if own else document
    if is_plain(rest):
        return document
    return cast(dict[str, Any], policy_checked(document))


def _screen_whole(document: dict[str, Any]) -> None:
    """Raise the document's first violation of the policy, if it has one."""
    if not is_plain(document):
        policy_checked(document)
