"""The tool types the API accepts in an agent's config are exactly the runtime's registry
(STYLE: polar's ``benefit/registry.py``): a type the API takes always has a class that runs it,
and a tool class is never unreachable from a config."""

from __future__ import annotations

import typing

from callplane.agents import config
from callplane.tools.registry import TOOL_TYPES


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
