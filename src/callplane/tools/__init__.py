"""The agent's tools (docs/tools.md): what the brain may do during a call besides talk.

A tool is data in the agent's commit (``{"type", "name", "description", ...settings}``) and a
small class in ``registry.py`` keyed by that ``type``. The brain sees each as an OpenAI function;
``toolbox.py`` validates a call's arguments against the tool's schema, runs it under a deadline
and turns every failure into a ``ToolError`` whose text goes back to the brain: a tool never ends
or breaks a call by failing.
"""

from __future__ import annotations

import abc
import builtins
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import httpx

    from callplane.brain.base import Brain
    from callplane.runtime import Runtime
    from callplane.telephony.base import Connection
    from callplane.tools.config import ToolConfig


class ToolError(Exception):
    """A tool could not do what was asked; the message is what the brain is told."""


@dataclass(frozen=True)
class ToolResult:
    #: What the brain is told (JSON-able, or text).
    output: Any
    #: The call ends once the agent's current line has been heard, for this reason.
    end_call: str | None = None


@dataclass(frozen=True)
class Transfer:
    """A transfer the far end accepted: the call's transfer record (docs/tools.md#transfers)."""

    destination: Mapping[str, Any]
    #: The transfer leg's SIP Call-ID (``handoff_metadata[provider].conversation_id``).
    leg_call_id: str
    screen_pop_token: str


async def _nothing(*_args: Any) -> None:
    return None


@dataclass
class ToolContext:
    """What a tool may reach on one call. The parts a test does not need stay None; a tool that
    needs a missing part fails with a ``ToolError`` (the brain is told), never the call."""

    connection: Connection
    #: The call as a function tool's payload names it (docs/tools.md: ``id``, ``direction``,
    #: ``from_number``, ``to_number``, ``params``, ``external_identifiers``, ``agent_id``,
    #: ``agent_commit_id``).
    call: Mapping[str, Any] = field(default_factory=dict)
    organization_id: int | None = None
    runtime: Runtime | None = None
    #: The client function tools post with (webhooks' network rule applies inside it).
    http: httpx.AsyncClient | None = None
    #: The agent's ``tools_secret`` (signs function tool requests).
    tools_secret: str | None = None
    #: Sets the call's ``cart`` (a function tool's JSON result holding one).
    set_cart: Callable[[dict[str, Any]], Awaitable[None]] = _nothing
    #: Records an accepted transfer on the call (``transferred``, token, handoff metadata,
    #: ``call.transferred``).
    record_transfer: Callable[[Transfer], Awaitable[None]] = _nothing
    #: Says a line to the caller (a transfer's ``message``) before the tool goes on.
    say: Callable[[str], Awaitable[None]] = _nothing
    #: Says a line on another connection in the call's voice (a warm transfer's summary to
    #: the person who answered), returning once it has been heard.
    speak_to: Callable[[Connection, str], Awaitable[None]] = _nothing
    #: The call's transcript so far (SPEC's entries), and the brain (None: none configured),
    #: for a warm transfer's summary.
    transcript: list[dict[str, Any]] = field(default_factory=list)
    brain: Brain | None = None
    #: Changes the call's language (None: a text turn, which has no call to change).
    switch_language: Callable[[str], Awaitable[bool]] | None = None

    def need_runtime(self) -> tuple[Runtime, int]:
        if self.runtime is None or self.organization_id is None:
            raise ToolError("this tool is not available on this call")
        return self.runtime, self.organization_id


@dataclass(frozen=True)
class CallHooks:
    """What only a phone call gives its tools (a text conversation has none of it)."""

    set_cart: Callable[[dict[str, Any]], Awaitable[None]]
    record_transfer: Callable[[Transfer], Awaitable[None]]
    speak_to: Callable[[Connection, str], Awaitable[None]]
    transcript: list[dict[str, Any]]
    brain: Brain | None
    switch_language: Callable[[str], Awaitable[bool]] | None = None


def tool_context(
    *,
    connection: Connection,
    call: Mapping[str, Any],
    organization_id: int,
    runtime: Runtime,
    http: httpx.AsyncClient,
    tools_secret: str | None,
    on_call: CallHooks | None,
) -> ToolContext:
    """The one way a conversation gives its tools their reach, on a call or in a text turn:
    every part is named here (none left to a default by forgetting it); ``on_call`` None is a
    text turn, where a cart, a transfer record or another line have no call to act on."""
    context = ToolContext(
        connection=connection,
        call=call,
        organization_id=organization_id,
        runtime=runtime,
        http=http,
        tools_secret=tools_secret,
    )
    if on_call is not None:
        context.set_cart = on_call.set_cart
        context.record_transfer = on_call.record_transfer
        context.speak_to = on_call.speak_to
        context.transcript = on_call.transcript
        context.brain = on_call.brain
        context.switch_language = on_call.switch_language
    return context


class Tool(abc.ABC):
    """One configured tool of the agent. A kind declares ``config_model`` (its config's
    pydantic model, ``type: Literal["<kind>"]`` first): its ``type`` is read from there."""

    #: The config's ``type`` (the registry's key).
    type: ClassVar[str]
    #: What the agent config accepts for this kind (None: a kind the API does not offer).
    config_model: ClassVar[builtins.type[ToolConfig] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        model = cls.__dict__.get("config_model")
        if model is not None:
            (cls.type,) = typing.get_args(model.model_fields["type"].annotation)

    #: What the brain reads when the config gives no description.
    default_description: ClassVar[str] = ""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = config
        self.name = str(config.get("name") or self.type)
        self.description = str(config.get("description") or self.default_description)

    @property
    def timeout_seconds(self) -> float:
        return 10.0

    @property
    def speak_while_running(self) -> str | None:
        """A line said when no result has come within a second."""
        return None

    @abc.abstractmethod
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema object of the arguments."""

    def definition(self) -> dict[str, Any]:
        """The OpenAI function definition the brain sees."""
        function: dict[str, Any] = {"name": self.name, "parameters": self.parameters()}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    @abc.abstractmethod
    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Do it; raise ``ToolError`` to tell the brain why not."""


__all__ = [
    "CallHooks",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Transfer",
    "tool_context",
]
