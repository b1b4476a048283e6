"""Which brain the deployment configured: the one place that names the providers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from callplane.brain.base import Brain
from callplane.brain.client import ChatCompletionsBrain

if TYPE_CHECKING:
    from callplane.settings import Settings


def build_brain(settings: Settings) -> Brain | None:
    """The configured brain, or None when ``CALLPLANE_LLM_BASE_URL`` is unset (the agent then
    speaks ``first_message`` and listens, docs/engine-core.md)."""
    return ChatCompletionsBrain.from_settings(settings)
