"""GET /calls/find_by_attribute: criteria, the ``fields`` projection, the lookup (SPEC;
docs/api-contract.md#find-by-attribute).

Numbered comments refer to the rules of SPEC's find_by_attribute section.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.calls import service
from callplane.calls.attributes import EXTERNAL, PARAM, newest_match
from callplane.errors import InvalidInput, NotFound
from callplane.kit.tenancy import select_owned
from callplane.models.calls import Call
from callplane.runtime import Runtime

MAX_FIELDS = 50
MAX_FIELDS_CHARS = 1000

#: Rule 3: the plain fields a compact call may hold, and the column each one reads.
COMPACT_FIELDS = {
    "id": Call.id,
    "summary": Call.summary,
    "status": Call.status,
    "duration": Call.duration,
    "transferred": Call.transferred,
    "agent_id": Call.agent_uuid,
    "agent_commit_id": Call.agent_commit_id,
    "screen_pop_token": Call.screen_pop_token,
}
PARAMS_PREFIX = "params."


def _invalid(message: str, field: str) -> InvalidInput:
    return InvalidInput(message, loc=("query", field))


def search_pairs(
    param_key: str | None,
    param_value: str | None,
    external_identifier_key: str | None,
    external_identifier_value: str | None,
) -> list[tuple[str, str, str]]:
    """(source, key, value) for every pair given; both pairs must both match
    (docs/api-contract.md#find-by-attribute)."""
    pairs = []
    for source, key_name, key, value_name, value in (
        (PARAM, "param_key", param_key, "param_value", param_value),
        (
            EXTERNAL,
            "external_identifier_key",
            external_identifier_key,
            "external_identifier_value",
            external_identifier_value,
        ),
    ):
        if key is None and value is None:
            continue
        if key is None:
            raise _invalid(f"{key_name} is required when {value_name} is given", key_name)
        if value is None:
            raise _invalid(f"{value_name} is required when {key_name} is given", value_name)
        if key == "":
            raise _invalid(f"{key_name} must not be empty", key_name)
        pairs.append((source, key, value))
    if not pairs:
        # Rule 7: no search pair at all.
        raise InvalidInput(
            "No search criteria: give param_key and param_value, or external_identifier_key "
            "and external_identifier_value",
            loc=("query",),
        )
    return pairs


def parse_fields(fields: str | None) -> list[str] | None:
    """The requested field names in order, or None for the full call (rule 6)."""
    if fields is None:
        return None
    if len(fields) > MAX_FIELDS_CHARS:
        raise _invalid(f"fields must be at most {MAX_FIELDS_CHARS} characters", "fields")
    names = list(dict.fromkeys(n.strip() for n in fields.split(",") if n.strip()))
    if len(names) > MAX_FIELDS:
        raise _invalid(f"fields must name at most {MAX_FIELDS} fields", "fields")
    for name in names:
        # Rule 5: an unsupported name is a validation error naming it.
        if name.startswith(PARAMS_PREFIX):
            if not name[len(PARAMS_PREFIX) :]:
                raise _invalid(f"unsupported field '{name}': params.<key> needs a key", "fields")
        elif name not in COMPACT_FIELDS:
            raise _invalid(f"unsupported field '{name}'", "fields")
    # An empty list (fields="" or only commas) asks for nothing in particular: the full call.
    return names or None


@dataclass(frozen=True)
class Projection:
    names: list[str]

    @property
    def needs_params(self) -> bool:
        return any(n.startswith(PARAMS_PREFIX) for n in self.names)

    def columns(self) -> list[Any]:
        wanted: list[Any] = [COMPACT_FIELDS[n] for n in self.names if n in COMPACT_FIELDS]
        if self.needs_params:
            wanted.append(Call.params)
        return wanted or [Call.id]

    def build(self, row: Any) -> dict[str, Any]:
        """Rule 4: exactly the requested fields; params.<key> nested under params; null if unset."""
        values = row._mapping
        compact: dict[str, Any] = {}
        for name in self.names:
            if name in ("id", "agent_id"):
                compact[name] = service.uuid_text(values[COMPACT_FIELDS[name]])
            elif name in COMPACT_FIELDS:
                compact[name] = values[COMPACT_FIELDS[name]]
            else:
                key = name[len(PARAMS_PREFIX) :]
                params = values[Call.params] or {}
                compact.setdefault("params", {})[key] = params.get(key)
        return compact


async def find_call_by_attribute(
    session: AsyncSession,
    runtime: Runtime,
    organization_id: int,
    pairs: list[tuple[str, str, str]],
    fields: list[str] | None,
) -> dict[str, Any]:
    """Rule 2: only the most recent match (created_at, then id); rule 7: none is 404."""
    call_uuid = await newest_match(session, organization_id, pairs)
    if call_uuid is None:
        raise NotFound("No call matches the given attributes")
    if fields is None:
        call = await service.get_call(session, organization_id, call_uuid)
        [wire] = await service.calls_wire(session, runtime, organization_id, [call])
        return wire
    projection = Projection(fields)
    query = select_owned(Call, organization_id, *projection.columns()).where(Call.id == call_uuid)
    row = (await session.execute(query)).one()
    return projection.build(row)
