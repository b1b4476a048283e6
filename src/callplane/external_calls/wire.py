"""External calls and their legs as plain dicts in the shape of SPEC's External call and
Recording (serialized by orjson; the wire models in ``schemas`` document the same shape). Used by
the routes and by the worker's webhook events."""

from __future__ import annotations

from typing import Any

from callplane.external_calls.service import PROCESSED_STATUS
from callplane.models.external_calls import ExternalCall, Recording


def wire_call(call: ExternalCall, legs: list[Recording], urls: dict[Any, str]) -> dict[str, Any]:
    # Plain dicts (serialized by orjson): the response_model above documents the same shape.
    # Uuids go out as text: asyncpg returns its own UUID subclass, which orjson does not know.
    return {
        "id": str(call.id),
        "external_call_id": call.external_call_id,
        "title": call.title,
        "direction": call.direction,
        "from_number": call.from_number,
        "to_number": call.to_number,
        "duration_seconds": call.duration_seconds,
        "started_at": call.started_at,
        "status": call.status,
        "recording_count": len(legs),
        "source": (
            {
                "id": _text(call.source_id),
                "name": call.source_name,
                "provider": call.source_provider,
            }
            if call.source_id or call.source_name or call.source_provider
            else None
        ),
        "created_at": call.created_at,
        "updated_at": call.updated_at,
        "recording_presigned_urls": [urls[leg.id] for leg in legs if leg.id in urls],
        "recordings": [wire_leg(leg) for leg in legs],
    }


def wire_leg(leg: Recording) -> dict[str, Any]:
    processed = leg.status == PROCESSED_STATUS
    return {
        "id": str(leg.id),
        "file_name": leg.file_name,
        "status": leg.status,
        "started_at": leg.started_at,
        "transcript": leg.transcript if processed else None,
        "summary": leg.summary if processed else None,
        "created_at": leg.created_at,
        "updated_at": leg.updated_at,
    }


def _text(value: object | None) -> str | None:
    return None if value is None else str(value)
