"""A claimed test run, worked through: every test ``repeat`` times against the run's commit.

A test passes when the share of its passing runs reaches its ``pass_rate``; the run passes when
every test does. The run is ``error`` (with the reason) when the commit is gone, no language
model is configured or it fails, or a judge answers something that is not a verdict: a run
that could not be judged must never read as passed or failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from callplane.agent_tests.checks import check
from callplane.agent_tests.judge import UnreadableVerdict, judge_model, verdict
from callplane.agent_tests.playing import AudioPlayer, Played, play_text
from callplane.agent_tests.queue import Claim
from callplane.agents.config import read_config
from callplane.agents.conversations import Scene, prepare
from callplane.agents.service import load_commit_to_run
from callplane.agents.text_tools import Mocked
from callplane.brain.base import Brain, BrainError
from callplane.brain.build import build_brain
from callplane.errors import InvalidInput
from callplane.runtime import Runtime
from callplane.tools.toolbox import Toolbox

Player = Callable[[dict[str, Any], dict[str, Any]], Awaitable[Played]]

#: Tests of one run in conversation at once (each waits on the model, not on this process).
CONCURRENCY = 8


class RunFailed(Exception):
    """The run cannot be judged; the message is the run's ``error``."""


def tools_of(config: Mapping[str, Any]) -> set[str]:
    """The tool names a commit's brain is offered (``end_call`` always among them)."""
    return set(Toolbox.from_configs(config.get("tools", [])).tools)


async def run_tests(
    runtime: Runtime, claim: Claim, audio: AudioPlayer | None = None
) -> tuple[str, list[dict[str, Any]], str | None]:
    """The run's status, results and error; ``audio`` plays audio-mode runs (the engine's)."""
    if claim.mode == "audio" and audio is None:
        return "error", [], "audio mode is not available on this worker"
    tests: list[dict[str, Any]] = claim.work.get("tests", [])
    scenes: dict[str, Scene | str] = {}
    async with runtime.db.session(write=False) as session:
        commit = await load_commit_to_run(session, claim.organization_id, claim.commit_id)
        if commit is None:
            return "error", [], "the run's commit no longer exists"
        typed = read_config(commit.config)
        for test in tests:
            try:
                scenes[test["name"]] = await prepare(
                    session,
                    claim.organization_id,
                    typed,
                    test.get("params", {}),
                    test.get("contact"),
                )
            except InvalidInput as exc:
                scenes[test["name"]] = exc.message
    brain = build_brain(runtime.settings)
    if brain is None:
        return "error", [], "No language model is configured (CALLPLANE_LLM_BASE_URL)"
    model = judge_model(runtime.settings)

    # Audio runs in real time and holds the machine's recogniser: one test at a time.
    limit = asyncio.Semaphore(1 if claim.mode == "audio" else CONCURRENCY)
    player = None
    if claim.mode == "audio" and audio is not None:
        spoken = audio

        async def player_of(config: dict[str, Any], test: dict[str, Any]) -> Played:
            return await spoken(runtime, brain, config, str(claim.commit_id), test, model)

        player = player_of

    async def one(test: dict[str, Any]) -> dict[str, Any]:
        async with limit:
            return await _test_result(
                brain, model, commit.config, test, scenes[test["name"]], player
            )

    failure: str | None = None
    try:
        async with asyncio.TaskGroup() as group:
            pending = [group.create_task(one(test)) for test in tests]
    except* UnreadableVerdict as failed:
        failure = str(failed.exceptions[0])
    except* BrainError as failed:
        failure = f"The language model failed: {failed.exceptions[0]}"
    finally:
        await brain.aclose()
    if failure is not None:
        return "error", [], failure
    results = [task.result() for task in pending]
    return ("passed" if all(r["passed"] for r in results) else "failed"), results, None


async def _test_result(
    brain: Brain,
    model: str | None,
    config: dict[str, Any],
    test: dict[str, Any],
    scene: Scene | str,
    player: Player | None = None,
) -> dict[str, Any]:
    runs = [
        await _one_run(brain, model, config, test, scene, player)
        for _ in range(test.get("repeat", 1))
    ]
    rate = sum(r["passed"] for r in runs) / len(runs)
    return {
        "test": test["name"],
        "passed": rate >= test.get("pass_rate", 1.0),
        "pass_rate": round(rate, 4),
        "runs": runs,
    }


async def _one_run(
    brain: Brain,
    model: str | None,
    config: dict[str, Any],
    test: dict[str, Any],
    scene: Scene | str,
    player: Player | None = None,
) -> dict[str, Any]:
    if isinstance(scene, str):
        return {"passed": False, "failures": [scene], "transcript": [], "reply_ms": []}
    # Mocks are checked against the commit under test: a test may be written for a tool that
    # exists only on a branch, and must fail clearly on a commit without it.
    missing = sorted(set(test.get("mocks", {})) - tools_of(config))
    if missing:
        failures = [f"mocks.{name}: the commit has no tool {name}" for name in missing]
        return {"passed": False, "failures": failures, "transcript": [], "reply_ms": []}
    if player is not None:
        played = await player(config, test)
    else:
        played = await play_text(
            brain, Mocked(test.get("mocks", {})), config, test, scene, caller_model=model
        )
    failures = check(
        test.get("expect", {}),
        played.transcript,
        ended=played.ended,
        reply_ms=played.reply_ms if player is not None else (),
        heard=played.heard,
    )
    for index, criterion in enumerate(test.get("judge", [])):
        passed, reason = await verdict(brain, model, criterion, played.transcript)
        if not passed:
            failures.append(f"judge.{index}: {criterion!r} was judged failed: {reason}")
    return {
        "passed": not failures,
        "failures": failures,
        "transcript": played.transcript,
        "reply_ms": played.reply_ms if player is not None else [],
    }
