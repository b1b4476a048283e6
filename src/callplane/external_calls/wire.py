"""External calls and their legs as plain dicts in the shape of SPEC's External call and
Recording (serialized by orjson; the wire models in ``schemas`` document the same shape). Used by
the routes and by the worker's webhook events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from callplane.external_calls.service import CALL_COLUMNS, LEG_FIELDS, PROCESSED_STATUS
from callplane.models.external_calls import ExternalCall, Recording


def wire_call(call: ExternalCall, legs: list[Recording], urls: dict[Any, str]) -> dict[str, Any]:
    """``call_json`` of ORM objects (writes and the worker's events)."""
    return call_json(
        {name: getattr(call, name) for name in CALL_COLUMNS},
        [{name: getattr(leg, name) for name in LEG_FIELDS} for leg in legs],
        urls,
    )


def wire_leg(leg: Recording) -> dict[str, Any]:
    return leg_json({name: getattr(leg, name) for name in LEG_FIELDS})


def call_json(
    call: Mapping[str, Any], legs: Sequence[Mapping[str, Any]], urls: Mapping[Any, str]
) -> dict[str, Any]:
    """A call (a row with the columns of ``CALL_COLUMNS``) and its visible legs (rows with the
    columns of ``LEG_FIELDS``); ``urls`` are the signed URLs by leg id (the leg's ``id`` as
    given: text for rows read by ``service.read_*``, a UUID for ORM objects)."""
    # Plain dicts (serialized by orjson): the response_model of the routes documents the shape.
    # Uuids go out as text: asyncpg returns its own UUID subclass, which orjson does not know.
    source_id = call["source_id"]
    source_name = call["source_name"]
    source_provider = call["source_provider"]
    return {
        "id": str(call["id"]),
        "external_call_id": call["external_call_id"],
        "title": call["title"],
        "direction": call["direction"],
        "from_number": call["from_number"],
        "to_number": call["to_number"],
        "duration_seconds": call["duration_seconds"],
        "started_at": call["started_at"],
        "status": call["status"],
        "recording_count": len(legs),
        "source": (
            {"id": _text(source_id), "name": source_name, "provider": source_provider}
            if source_id or source_name or source_provider
            else None
        ),
        "created_at": call["created_at"],
        "updated_at": call["updated_at"],
        "recording_presigned_urls": [urls[leg["id"]] for leg in legs if leg["id"] in urls],
        "recordings": [leg_json(leg) for leg in legs],
    }


def leg_json(leg: Mapping[str, Any]) -> dict[str, Any]:
    processed = leg["status"] == PROCESSED_STATUS
    return {
        "id": str(leg["id"]),
        "file_name": leg["file_name"],
        "status": leg["status"],
        "started_at": leg["started_at"],
        "transcript": leg["transcript"] if processed else None,
        "summary": leg["summary"] if processed else None,
        "created_at": leg["created_at"],
        "updated_at": leg["updated_at"],
        # An extension of SPEC's Recording: why a leg is in error (null otherwise).
        "error": leg["error"] if leg["status"] == "error" else None,
    }


def _text(value: object | None) -> str | None:
    return None if value is None else str(value)
