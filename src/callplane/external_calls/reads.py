"""The two reads of the API as JSON bodies (SPEC GET /external_calls and
GET /external_calls/{uuid}): the rows of ``service``, their playable legs' signed URLs and the
wire shape of ``wire``. The routes (``router``) and their hot path (``hot``) answer with these,
so a request gets the same body whichever way it came in."""

from __future__ import annotations

import uuid
from typing import Any

from callplane.external_calls import service
from callplane.external_calls.wire import call_json
from callplane.kit.driver import Db
from callplane.kit.pagination import total_pages
from callplane.recordings.service import sign_rows
from callplane.runtime import Runtime


async def external_call_body(
    db: Db, runtime: Runtime, organization_id: int, external_call_id: uuid.UUID
) -> dict[str, Any]:
    call, legs = await service.read_external_call(db, organization_id, external_call_id)
    return call_json(call, legs, await sign_rows(runtime, legs))


async def external_calls_page(
    db: Db, runtime: Runtime, organization_id: int, page: int, page_size: int
) -> dict[str, Any]:
    calls, total = await service.read_external_calls(db, organization_id, page, page_size)
    urls = await sign_rows(runtime, [leg for _, legs in calls for leg in legs])
    return {
        "external_calls": [call_json(call, legs, urls) for call, legs in calls],
        "total_count": total,
        "page": page,
        "page_size": page_size,
        "total_pages": total_pages(total, page_size),
    }
