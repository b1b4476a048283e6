"""The tools of a text conversation (``POST /agents/{uuid}/conversations``, docs/tools.md).

``mock`` answers every tool ``{"mocked": true}``. ``run`` runs them as a call would: the same
``Toolbox`` (arguments checked against the schema, the tool's deadline, every failure an error
result the brain reads) and a ``ToolContext`` like a call's — the organization's tables and
contact data through their services, function tools signed with the agent's ``tools_secret``
over a client holding webhooks' network rule. There is no phone line: ``transfer_call`` and
``send_dtmf`` answer a tool error, and the request's ``contact`` stands as the other party (no
contact, no contact data to read or write).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from callplane.brain.base import ToolCall
from callplane.runtime import Runtime
from callplane.telephony.base import (
    Brief,
    Connection,
    EndedBy,
    Frame,
    TelephonyFeatureMissing,
    TransferOutcome,
    TransferTarget,
)
from callplane.tools import ToolContext, tool_context
from callplane.tools.function import function_tool_client
from callplane.tools.toolbox import Toolbox

MOCKED = orjson.dumps({"mocked": True}).decode()
NO_LINE = "is not available in a text conversation (there is no phone line)"


class TextLine(Connection):
    """The line of a text conversation: nothing to hear or play, no phone network behind it."""

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(self) -> None:
        super().__init__(media="text")

    async def frames(self) -> AsyncIterator[Frame]:
        nothing: tuple[Frame, ...] = ()
        for frame in nothing:
            yield frame

    async def play(self, frame: Frame) -> None:
        return None

    async def interrupt(self) -> None:
        return None

    async def hangup(self) -> None:
        return None

    async def wait_ended(self) -> EndedBy:
        return "local"

    async def send_dtmf(self, digits: str) -> None:
        raise TelephonyFeatureMissing(f"pressing keys {NO_LINE}")

    async def transfer(self, target: TransferTarget, brief: Brief | None = None) -> TransferOutcome:
        raise TelephonyFeatureMissing(f"transferring the call {NO_LINE}")


@dataclass(frozen=True)
class Answer:
    #: The ``tool`` entry's text.
    text: str
    ended: bool


class ToolRunner(Protocol):
    async def answer(self, call: ToolCall) -> Answer: ...


@dataclass(frozen=True)
class Mocked:
    """Every tool answers its mock (an agent test's ``mocks``), else ``{"mocked": true}``."""

    mocks: Mapping[str, Any] = field(default_factory=dict)

    async def answer(self, call: ToolCall) -> Answer:
        text = orjson.dumps(self.mocks[call.name]).decode() if call.name in self.mocks else MOCKED
        return Answer(text, call.name == "end_call")


@dataclass
class Running:
    toolbox: Toolbox
    context: ToolContext

    async def answer(self, call: ToolCall) -> Answer:
        use = await self.toolbox.use(call, self.context)
        return Answer(use.text, use.end_call is not None)


@asynccontextmanager
async def tool_runner(
    runtime: Runtime,
    organization_id: int,
    tools: Sequence[Mapping[str, Any]],
    *,
    run: bool,
    tools_secret: str | None,
    call: Mapping[str, Any],
) -> AsyncIterator[ToolRunner]:
    """Mocked tools, or the commit's ``tools`` (as it stores them) run for real for the turn's
    length."""
    if not run:
        yield Mocked()
        return
    async with function_tool_client(runtime.settings) as http:
        context = tool_context(
            connection=TextLine(),
            call=call,
            organization_id=organization_id,
            runtime=runtime,
            http=http,
            tools_secret=tools_secret,
            on_call=None,
        )
        yield Running(Toolbox.from_configs(tools), context)
