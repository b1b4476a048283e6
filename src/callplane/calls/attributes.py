"""The searchable attributes of calls: the index behind find_by_attribute
(docs/api-contract.md#find-by-attribute).

Every write of a call's params or external_identifiers writes, in the same transaction, one
``call_attributes`` row per key whose value is a string, a number or a boolean. A lookup is then
one descent of ``ix_call_attributes_lookup`` to the newest matching entry: its cost depends on
the depth of the btree, not on the number of calls.
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import and_, insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from callplane.kit.tenancy import same_organization, select_owned
from callplane.models.calls import CallAttribute

PARAM = "param"
EXTERNAL = "external"


def digest(text: str) -> bytes:
    # surrogatepass: a query string can carry anything; hashing must never fail.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


#: Keys repeat across calls (every call of an import has the same few): their digests are kept.
_key_digest = functools.lru_cache(maxsize=4096)(digest)


def value_text(value: Any) -> str | None:
    """The text a stored value matches: strings as they are, numbers and booleans as JSON.

    Objects, arrays and null have no text: they never match
    (docs/api-contract.md#find-by-attribute). A number's JSON is its ``repr`` (what ``json.dumps``
    writes for a finite int or float, without building an encoder).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return float.__repr__(value)
    return None


def attribute_entries(
    params: Mapping[str, Any], external_identifiers: Mapping[str, Any]
) -> Iterator[tuple[str, bytes, bytes]]:
    """``(source, key_digest, value_digest)`` of each indexed entry of one call."""
    for source, values in ((PARAM, params), (EXTERNAL, external_identifiers)):
        for key, value in values.items():
            text = value_text(value)
            if text is not None:
                yield source, _key_digest(key), digest(text)


def attribute_rows(
    organization_id: int,
    call_uuid: uuid.UUID,
    created_at: datetime,
    params: Mapping[str, Any],
    external_identifiers: Mapping[str, Any],
) -> list[dict[str, Any]]:
    return [
        {
            "organization_id": organization_id,
            "call_uuid": call_uuid,
            "source": source,
            "key_digest": key_digest,
            "value_digest": value_digest,
            "created_at": created_at,
        }
        for source, key_digest, value_digest in attribute_entries(params, external_identifiers)
    ]


async def index_attributes(session: AsyncSession, rows: Iterable[dict[str, Any]]) -> None:
    batch = list(rows)
    if batch:
        await session.execute(insert(CallAttribute), batch)


async def newest_match(
    session: AsyncSession,
    organization_id: int,
    pairs: list[tuple[str, str, str]],
) -> uuid.UUID | None:
    """The most recent call (created_at, then id) having every (source, key, value) of ``pairs``.

    The first pair drives the scan of the lookup index, newest first; any further pair is
    checked per candidate through the primary key (organization, call, source, key).
    """
    first, *others = pairs
    driver = aliased(CallAttribute)
    query = select_owned(driver, organization_id, driver.call_uuid).where(
        driver.source == first[0],
        driver.key_digest == digest(first[1]),
        driver.value_digest == digest(first[2]),
    )
    for source, key, value in others:
        other = aliased(CallAttribute)
        query = query.join(
            other,
            and_(
                same_organization(other, driver),
                other.call_uuid == driver.call_uuid,
                other.source == source,
                other.key_digest == digest(key),
                other.value_digest == digest(value),
            ),
        )
    query = query.order_by(driver.created_at.desc(), driver.call_uuid.desc()).limit(1)
    found: uuid.UUID | None = (await session.execute(query)).scalar_one_or_none()
    return found
