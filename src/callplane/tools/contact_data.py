"""``contact_data``: the other party's contact data (``to_number`` outbound, ``from_number``
inbound), read; when ``writable``, top-level keys set with a PUT carrying ``expectedRevision``
(through ``contacts.service``, the API's own validation), retried once on a conflict."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import orjson

from callplane.contacts import service
from callplane.errors import CallplaneError, Conflict, NotFound
from callplane.models.base import utcnow
from callplane.tools import Tool, ToolContext, ToolError, ToolResult
from callplane.tools.config import ToolConfig

if TYPE_CHECKING:
    from callplane.runtime import Runtime


class ContactDataConfig(ToolConfig):
    type: Literal["contact_data"]
    writable: bool = False


class ContactData(Tool):
    config_model = ContactDataConfig
    default_description = "Read (and, when allowed, update) what is known about the other party."

    @property
    def writable(self) -> bool:
        return self.config.get("writable") is True

    def parameters(self) -> dict[str, Any]:
        if not self.writable:
            return {"type": "object", "properties": {}}
        return {
            "type": "object",
            "properties": {
                "set": {
                    "type": "object",
                    "description": "top-level keys to set (omit to only read)",
                }
            },
        }

    def _identifier(self, context: ToolContext) -> str:
        call = context.call
        other = "from_number" if call.get("direction") == "inbound" else "to_number"
        number = call.get(other)
        if not number:
            raise ToolError("the call has no other party's number")
        return str(number)

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        runtime, organization_id = context.need_runtime()
        identifier = self._identifier(context)
        changes = arguments.get("set") if self.writable else None
        for attempt in range(2):
            try:
                current = await _read(runtime, organization_id, identifier)
                if not changes:
                    return ToolResult({"data": current[0] if current else {}})
                data = {**(current[0] if current else {}), **changes}
                revision = current[1] if current else 0
                ttl = service.remaining_ttl(current[2], utcnow()) if current else None
                write = service.parse_write(
                    {"data": data, "expectedRevision": revision, "ttlSeconds": ttl}
                )
                async with runtime.db.session(write=True) as session:
                    await service.put_contact_data(session, organization_id, identifier, write)
                    await session.commit()
                return ToolResult({"data": data})
            except Conflict:
                if attempt:
                    raise ToolError("the contact data changed meanwhile; try again") from None
            except CallplaneError as exc:
                raise ToolError("; ".join(exc.errors) or exc.message) from None
        raise AssertionError("unreachable")


async def _read(
    runtime: Runtime, organization_id: int, identifier: str
) -> tuple[dict[str, Any], int, Any] | None:
    try:
        async with runtime.db.session(write=False) as session:
            stored = await service.get_contact_data(session, organization_id, identifier)
    except NotFound:
        return None
    return orjson.loads(stored.data_json), stored.revision, stored.expires_at
