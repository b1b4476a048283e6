"""``send_dtmf``: press keys, to get through a phone menu (RFC 4733 events on SIP)."""

from __future__ import annotations

from typing import Any, Literal

from callplane.telephony.base import DTMF_PATTERN, TelephonyFeatureMissing
from callplane.tools import Tool, ToolContext, ToolError, ToolResult
from callplane.tools.config import ToolConfig


class SendDtmfConfig(ToolConfig):
    type: Literal["send_dtmf"]


class SendDtmf(Tool):
    config_model = SendDtmfConfig
    default_description = "Press telephone keys (digits 0-9, * and #, A-D), e.g. in a phone menu."

    def parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"digits": {"type": "string", "pattern": DTMF_PATTERN}},
            "required": ["digits"],
        }

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        try:
            await context.connection.send_dtmf(arguments["digits"])
        except TelephonyFeatureMissing as exc:
            raise ToolError(str(exc)) from None
        return ToolResult({"sent": arguments["digits"]})
