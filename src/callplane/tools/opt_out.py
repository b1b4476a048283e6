"""``opt_out``: always present, like ``end_call``. The person asked not to be called again: their
number joins the organization's do-not-call list (``docs/campaigns.md``), the call ends once the
agent's goodbye has been heard, and a campaign's recipient becomes ``opted_out``. A caller line
holding one of the agent's ``opt_out_phrases`` does the same without the brain
(``engine/conversation/turn_loop.py``)."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from callplane.campaigns.donotcall import record_opt_out
from callplane.tools import Tool, ToolContext, ToolError, ToolResult
from callplane.tools.config import ToolConfig

OPTED_OUT = "the person asked not to be called again"
#: What the agent says when a caller's line opted out (the brain was not asked).
GOODBYE = "Understood. We won't call you again. Goodbye."


class OptOutConfig(ToolConfig):
    type: Literal["opt_out"]


async def opt_out(context: ToolContext) -> None:
    """List the person's number (the callee of an outbound call, the caller of an inbound one)."""
    runtime, organization_id = context.need_runtime()
    call = context.call
    number = (
        call.get("from_number") if call.get("direction") == "inbound" else call.get("to_number")
    )
    if not number or not call.get("id"):
        raise ToolError("this call has no phone number to list")
    async with runtime.db.session(write=True) as session:
        await record_opt_out(session, organization_id, uuid.UUID(str(call["id"])), str(number))
        await session.commit()


class OptOut(Tool):
    config_model = OptOutConfig
    default_description = (
        "The person asks not to be called again: their number is put on the do-not-call list "
        "and the call ends after your goodbye (say it in the same turn)."
    )

    def parameters(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}}

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        await opt_out(context)
        return ToolResult({"opted_out": True}, end_call=OPTED_OUT)
