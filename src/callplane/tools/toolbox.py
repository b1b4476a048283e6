"""Running the brain's tool calls: validated, under a deadline, never failing the call.

``Toolbox.use`` answers every ``ToolCall`` with a ``ToolUse``: an unknown tool, arguments that
break the schema (or are too large), a deadline passed or any exception become a short error the
brain reads (``{"error": ...}``) and may act on (retry with better arguments, tell the caller).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
import orjson

from callplane.brain.base import ToolCall
from callplane.observability import metrics
from callplane.tools import Tool, ToolContext, ToolError
from callplane.tools.registry import TOOL_TYPES

log = logging.getLogger("callplane.tools")

#: What the transcript keeps of a result (docs/tools.md), and so what the brain reads back.
RESULT_CHARS = 2000
#: Arguments larger than this are refused before any validation (a brain gone wild).
MAX_ARGUMENTS_BYTES = 64 * 1024


@dataclass(frozen=True)
class ToolUse:
    call: ToolCall
    #: The result as the transcript's ``tool`` entry holds it (at most RESULT_CHARS).
    text: str
    #: ``ok``, ``error``, ``timeout``, ``invalid_arguments``, ``unknown_tool``, ``interrupted``.
    outcome: str
    duration: float
    end_call: str | None = None

    def event(self) -> dict[str, Any]:
        """The ``tool.called`` event's data."""
        data: dict[str, Any] = {
            "name": self.call.name,
            "duration_seconds": round(self.duration, 3),
            "outcome": self.outcome,
        }
        if self.outcome != "ok":
            data["error"] = self.text
        return data


def result_text(output: Any) -> str:
    if isinstance(output, str):
        text = output
    else:
        text = orjson.dumps(output, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    return text if len(text) <= RESULT_CHARS else text[: RESULT_CHARS - 1] + "…"


def error_text(message: str) -> str:
    return result_text({"error": message})


#: Tool kinds every agent has, whether its commit lists them or not.
ALWAYS = ("end_call", "opt_out")


class Toolbox:
    """The tools of one agent commit, by name; ``end_call`` and ``opt_out`` always among
    them."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools: dict[str, Tool] = {}
        self._validators: dict[str, jsonschema.Draft202012Validator] = {}
        for tool in tools:
            if tool.name in self.tools:
                continue
            try:
                schema = tool.parameters()
                jsonschema.Draft202012Validator.check_schema(schema)
            except (jsonschema.SchemaError, TypeError, ValueError):
                # The API refuses such a schema; a commit from before that rule still runs,
                # without this tool, rather than failing the call.
                log.warning("skipping a tool whose parameters are no JSON Schema: %s", tool.name)
                continue
            self.tools[tool.name] = tool
            self._validators[tool.name] = jsonschema.Draft202012Validator(schema)
        for kind in ALWAYS:  # every agent can hang up, and honour "don't call me again"
            if not any(tool.type == kind for tool in self.tools.values()):
                tool = TOOL_TYPES[kind]({"type": kind})
                self.tools.setdefault(kind, tool)
                self._validators.setdefault(
                    kind, jsonschema.Draft202012Validator(tool.parameters())
                )

    @classmethod
    def from_configs(cls, configs: Sequence[Mapping[str, Any]]) -> Toolbox:
        """Tools of unknown types are skipped with a warning (the API refuses them; an old
        commit naming a type since removed must still run)."""
        tools = []
        for config in configs:
            kind = TOOL_TYPES.get(str(config.get("type")))
            if kind is None:
                log.warning("skipping a tool of unknown type", extra={"type": config.get("type")})
                continue
            tools.append(kind(config))
        return cls(tools)

    def definitions(self) -> list[dict[str, Any]]:
        return [tool.definition() for tool in self.tools.values()]

    def speak_while_running(self, calls: Sequence[ToolCall]) -> str | None:
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is not None and tool.speak_while_running:
                return tool.speak_while_running
        return None

    async def use(self, call: ToolCall, context: ToolContext) -> ToolUse:
        began = time.monotonic()
        tool = self.tools.get(call.name)
        use = await self._use(tool, call, context, began)
        if tool is not None:
            # An unknown name has no type to count it under: the brain's mistake, in the event.
            metrics.count_tool_call(tool.type, use.outcome == "ok", use.duration)
        return use

    async def _use(
        self, tool: Tool | None, call: ToolCall, context: ToolContext, began: float
    ) -> ToolUse:
        def answer(text: str, outcome: str, end_call: str | None = None) -> ToolUse:
            return ToolUse(call, text, outcome, time.monotonic() - began, end_call)

        if tool is None:
            known = ", ".join(sorted(self.tools))
            return answer(
                error_text(f"there is no tool {call.name!r}; tools: {known}"), "unknown_tool"
            )
        if len(orjson.dumps(call.arguments)) > MAX_ARGUMENTS_BYTES:
            return answer(
                error_text(f"the arguments are larger than {MAX_ARGUMENTS_BYTES} bytes"),
                "invalid_arguments",
            )
        try:
            problems = _problems(self._validators[call.name], call.arguments)
        except Exception:  # a schema that cannot be evaluated (a bad pattern, say)
            log.exception("validating the arguments of %s failed", call.name)
            problems = ["the arguments could not be checked against the tool's schema"]
        if problems:
            return answer(
                error_text("invalid arguments: " + "; ".join(problems)), "invalid_arguments"
            )
        try:
            async with asyncio.timeout(tool.timeout_seconds):
                result = await tool.run(call.arguments, context)
            text = result_text(result.output)
        except TimeoutError:
            return answer(error_text(f"no result within {tool.timeout_seconds:g} s"), "timeout")
        except ToolError as exc:
            return answer(error_text(str(exc)), "error")
        except Exception as exc:  # a tool never breaks the call
            log.exception("tool %s failed", call.name)
            return answer(error_text(f"the tool failed ({type(exc).__name__})"), "error")
        return answer(text, "ok", result.end_call)


def _problems(validator: jsonschema.Draft202012Validator, arguments: dict[str, Any]) -> list[str]:
    problems = []
    for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))[:5]:
        where = "/".join(str(part) for part in error.path) or "arguments"
        problems.append(f"{where}: {error.message[:200]}")
    return problems
