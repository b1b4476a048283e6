"""``transfer_call``: hand the caller to a person (docs/tools.md#transfers).

The brain picks one of the configured destinations by name. Its ``message`` is said to the
caller first; then the network transfers (SIP REFER cold, or dial-and-bridge warm). Accepted:
the call's transfer record is written (``transferred``, ``screen_pop_token``,
``handoff_metadata``, ``call.transferred``) and, cold, the agent's leg has ended; warm, the
caller is talking to the person and the agent is out of the call. Refused, busy or unanswered:
the brain is told why, to tell the caller, and the conversation goes on.

Warm, the person who answers first hears a two-sentence summary in the call's voice: the
brain's (asked while the destination rings, under a short deadline), else one made of the
caller's own lines.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from callplane.brain.summary import summarize
from callplane.kit.schemas import SafeStr, normalize_number
from callplane.telephony.base import Connection, TelephonyFeatureMissing, TransferTarget
from callplane.telephony.bridge import RING_SECONDS
from callplane.tools import Tool, ToolContext, ToolError, ToolResult, Transfer
from callplane.tools.config import Name, Strict, Text, ToolConfig

TRANSFERRED = "the call was transferred"

#: The brain's summary for a warm transfer's person: refines the call summary's instructions.
HANDOFF_INSTRUCTIONS = (
    "This summary is read aloud to the person the call is being transferred to, before they"
    " talk to the caller: exactly two short sentences, saying who is calling and what they"
    " want. Plain spoken words, no labels or lists."
)
#: How long the brain has for it (the destination is ringing meanwhile), and the longest
#: summary said (a brain that rambles must not keep the caller waiting).
SUMMARY_SECONDS = 5.0
MAX_SUMMARY_CHARACTERS = 320


def new_screen_pop_token() -> str:
    """Url-safe, 192 random bits (at least 128: docs/tools.md#transfers)."""
    return secrets.token_urlsafe(24)


class Destination(Strict):
    name: Name
    number: Annotated[SafeStr, StringConstraints(max_length=64)] | None = None
    sip: (
        Annotated[SafeStr, StringConstraints(max_length=512, pattern=r"^sips?:\S+@\S+$")] | None
    ) = None
    description: Text | None = None
    mode: Literal["cold", "warm"] = "cold"
    handoff_provider: Name | None = None
    message: Text | None = None

    @model_validator(mode="after")
    def _one_target(self) -> Destination:
        if (self.number is None) == (self.sip is None):
            raise ValueError("needs exactly one of number (E.164) or sip (a SIP URI)")
        if self.number is not None:
            if not self.number.startswith("+"):
                raise ValueError("number must be E.164 (+ and digits)")
            normalize_number(self.number)
        return self


class TransferCallConfig(ToolConfig):
    type: Literal["transfer_call"]
    destinations: Annotated[list[Destination], Field(min_length=1, max_length=20)]


class TransferCall(Tool):
    config_model = TransferCallConfig
    default_description = "Transfer the caller to a person, at one of the destinations."

    @property
    def destinations(self) -> list[Mapping[str, Any]]:
        return [d for d in self.config.get("destinations") or () if isinstance(d, Mapping)]

    @property
    def timeout_seconds(self) -> float:
        # A warm transfer rings a person, then says the summary to them.
        return RING_SECONDS + 45.0

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
        summary = asyncio.ensure_future(handoff_summary(context)) if target.mode == "warm" else None

        async def brief(person: Connection) -> None:
            assert summary is not None
            await context.speak_to(person, await summary)

        try:
            outcome = await context.connection.transfer(target, brief if summary else None)
        except TelephonyFeatureMissing as exc:
            raise ToolError(str(exc)) from None
        finally:
            if summary is not None:
                summary.cancel()
        if not outcome.accepted:
            raise ToolError(f"the transfer to {wanted} did not go through: {outcome.reason}")
        # Shielded: the far end hanging up now (it was handed over) must not lose the record.
        await asyncio.shield(
            context.record_transfer(Transfer(destination, outcome.leg_call_id, token))
        )
        # Cold, the agent's leg has ended; warm, the caller now talks to the person: either
        # way the agent's conversation is over.
        return ToolResult({"transferred": True, "destination": wanted}, end_call=TRANSFERRED)


async def handoff_summary(context: ToolContext) -> str:
    """Two sentences for the person taking the call over."""
    transcript = list(context.transcript)
    if context.brain is not None:
        try:
            summary = await asyncio.wait_for(
                summarize(context.brain, transcript, HANDOFF_INSTRUCTIONS), SUMMARY_SECONDS
            )
        except TimeoutError:
            summary = None
        if summary is not None and summary.text and summary.error is None:
            return _shortened(summary.text)
    return from_caller_lines(transcript)


def from_caller_lines(transcript: Sequence[Mapping[str, Any]]) -> str:
    """The summary without a brain: the caller's own last words."""
    said = [
        str(e["text"]).strip()
        for e in transcript
        if e.get("role") == "user" and e.get("text") and not e.get("backchannel")
    ]
    if not said:
        return "A caller is being put through to you. They have not said why yet."
    return _shortened(f"A caller is being put through to you. They said: {' '.join(said[-2:])}")


def _shortened(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= MAX_SUMMARY_CHARACTERS:
        return text
    cut = text[:MAX_SUMMARY_CHARACTERS]
    end = cut.rfind(". ")
    return cut[: end + 1] if end > 0 else cut.rsplit(" ", 1)[0]
