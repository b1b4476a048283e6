"""What every tool kind's config model builds on. Each ``tools/<kind>.py`` declares its own
model (``type: Literal["<kind>"]`` plus its settings) beside its class; ``registry.py`` gathers
them into the union the agent config accepts (``agents/config.py``). Models are strict and
refuse unknown keys, so an error names the exact JSON path a client got wrong."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

from callplane.kit.schemas import SafeStr

TOOL_NAME = r"^[a-zA-Z0-9_-]{1,64}$"

Text = Annotated[SafeStr, StringConstraints(max_length=2_000)]
Name = Annotated[SafeStr, StringConstraints(min_length=1, max_length=255)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ToolConfig(Strict):
    """The keys every tool has; a subclass narrows ``type`` to its ``Literal`` and adds its
    settings."""

    type: str
    name: Annotated[str, StringConstraints(pattern=TOOL_NAME)] | None = None
    description: Text | None = None
