"""``end_call``: always present. The call ends once the agent's current line has been heard."""

from __future__ import annotations

from typing import Any, Literal

from callplane.tools import Tool, ToolContext, ToolResult
from callplane.tools.config import ToolConfig

AGENT_HANGUP = "the agent hung up"


class EndCallConfig(ToolConfig):
    type: Literal["end_call"]


class EndCall(Tool):
    config_model = EndCallConfig
    default_description = "Hang up once the conversation is over (say goodbye first)."

    def parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"reason": {"type": "string", "description": "why the call ends"}},
        }

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult({"ended": True}, end_call=AGENT_HANGUP)
