"""Replays of real calls against a candidate commit (filled in with the replay routes)."""

from __future__ import annotations

from typing import Any

from callplane.agent_tests.queue import Claim
from callplane.runtime import Runtime


async def run_replay(
    runtime: Runtime, claim: Claim
) -> tuple[str, list[dict[str, Any]], str | None]:
    return "error", [], "replays are not available"
