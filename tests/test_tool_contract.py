"""The tool types the API accepts in an agent's config are exactly the runtime's registry
(STYLE: polar's ``benefit/registry.py``): a type the API takes always has a class that runs it,
and a tool class is never unreachable from a config."""

from __future__ import annotations

import typing
from typing import Any, Literal

import pytest
from pydantic import TypeAdapter, ValidationError

from callplane.agents import config
from callplane.tools import Tool, ToolContext, ToolResult, registry
from callplane.tools.config import ToolConfig
from callplane.tools.registry import TOOL_TYPES
from callplane.tools.toolbox import Toolbox


def _accepted_types() -> set[str]:
    union, *_ = typing.get_args(config.Tool)
    return {
        value
        for member in typing.get_args(union)
        for value in typing.get_args(member.model_fields["type"].annotation)
    }


def test_the_api_accepts_exactly_the_registrys_tool_types() -> None:
    assert _accepted_types() == set(TOOL_TYPES) == set(config.TOOL_TYPES)


def test_each_registered_class_answers_to_its_key() -> None:
    assert all(kind.type == key for key, kind in TOOL_TYPES.items())


class SendSmsConfig(ToolConfig):
    type: Literal["send_sms"]
    sender: str


class SendSms(Tool):
    """A kind as a new module would write it: its config model beside its class."""

    config_model = SendSmsConfig

    def parameters(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"text": {"type": "string"}}}

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult({"sent": arguments["text"], "from": self.config["sender"]})


def test_a_new_kind_is_its_module_and_one_registry_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.TOOL_TYPES, SendSms.type, SendSms)
    accepted = TypeAdapter(registry.config_union())
    assert accepted.validate_python({"type": "send_sms", "sender": "+15550100"}).type == "send_sms"
    with pytest.raises(ValidationError):
        accepted.validate_python({"type": "send_sms", "sender": "x", "extra": 1})
    box = Toolbox.from_configs([{"type": "send_sms", "sender": "+15550100"}])
    assert list(box.tools) == ["send_sms", "end_call", "opt_out"]
