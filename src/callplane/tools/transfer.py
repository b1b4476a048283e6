"""``transfer_call``: hand the caller to a person (DESIGN §15 "Transfers").

The brain picks one of the configured destinations by name. Its ``message`` is said to the
caller first; then the network transfers (SIP REFER cold, or dial-and-bridge warm). Accepted:
the call's transfer record is written (``transferred``, ``screen_pop_token``,
``handoff_metadata``, ``call.transferred``) and, cold, the agent's leg has ended. Refused, busy
or unanswered: the brain is told why, to tell the caller, and the conversation goes on.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Mapping
from typing import Any

from callplane.telephony.base import TelephonyFeatureMissing, TransferTarget
from callplane.tools import Tool, ToolContext, ToolError, ToolResult, Transfer

TRANSFERRED = "the call was transferred"


def new_screen_pop_token() -> str:
    """Url-safe, 192 random bits (DESIGN §15 asks for at least 128)."""
    return secrets.token_urlsafe(24)


class TransferCall(Tool):
    type = "transfer_call"
    default_description = "Transfer the caller to a person, at one of the destinations."

    @property
    def destinations(self) -> list[Mapping[str, Any]]:
        return [d for d in self.config.get("destinations") or () if isinstance(d, Mapping)]

    @property
    def timeout_seconds(self) -> float:
        return 60.0  # a warm transfer rings a person

    def parameters(self) -> dict[str, Any]:
        names = [str(d.get("name")) for d in self.destinations]
        described = "; ".join(
            f"{d.get('name')}: {d.get('description')}"
            for d in self.destinations
            if d.get("description")
        )
        destination: dict[str, Any] = {"enum": names}
        if described:
            destination["description"] = described
        return {
            "type": "object",
            "properties": {"destination": destination},
            "required": ["destination"],
        }

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        wanted = arguments["destination"]
        destination = next(d for d in self.destinations if str(d.get("name")) == wanted)
        if destination.get("message"):
            await context.say(str(destination["message"]))
        token = new_screen_pop_token()
        target = TransferTarget(
            number=destination.get("number"),
            sip=destination.get("sip"),
            mode="warm" if destination.get("mode") == "warm" else "cold",
            screen_pop_token=token,
        )
        try:
            outcome = await context.connection.transfer(target)
        except TelephonyFeatureMissing as exc:
            raise ToolError(str(exc)) from None
        if not outcome.accepted:
            raise ToolError(f"the transfer to {wanted} did not go through: {outcome.reason}")
        # Shielded: the far end hanging up now (it was handed over) must not lose the record.
        await asyncio.shield(
            context.record_transfer(Transfer(destination, outcome.leg_call_id, token))
        )
        # Cold, the agent's leg has ended; warm, the caller now talks to the person: either
        # way the agent's conversation is over.
        return ToolResult({"transferred": True, "destination": wanted}, end_call=TRANSFERRED)
