"""One run of one test in text mode: the conversation route's turn, one caller line at a time.

The caller's lines are the test's ``turns``, or come from the brain playing its ``caller``
persona (at most ``max_turns`` lines: a persona that never hangs up still ends). Tools answer
their mocks; the agent's replies are timed from the caller's line to the reply's end.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from callplane.agent_tests.judge import caller_line
from callplane.agents.config import read_config
from callplane.agents.conversations import Scene, redactor, rounds
from callplane.agents.text_tools import ToolRunner
from callplane.brain.base import Brain
from callplane.brain.history import ChatHistory, Said
from callplane.runtime import Runtime


@dataclass
class Played:
    history: ChatHistory = field(default_factory=ChatHistory)
    ended: bool = False
    reply_ms: list[int] = field(default_factory=list)
    #: Audio mode: the agent's replies as the recogniser heard them.
    heard: list[str] | None = None

    @property
    def transcript(self) -> list[dict[str, Any]]:
        return self.history.transcript


async def play_text(
    brain: Brain,
    tools: ToolRunner,
    config: Mapping[str, Any],
    spec: Mapping[str, Any],
    scene: Scene,
    *,
    caller_model: str | None,
) -> Played:
    typed = read_config(config)
    # Test runs store their transcripts too: redacted as a call's are.
    played = Played(ChatHistory(redactor=redactor(typed)))
    for said in (scene.disclosure, scene.opening):
        if said:
            played.history.add(Said("assistant", said))
    scripted = [t["user"] for t in spec.get("turns") or []]
    persona = spec.get("caller")
    most = len(scripted) if persona is None else int(persona.get("max_turns", 10))
    for number in range(most):
        if persona is None:
            line: str | None = scripted[number]
        else:
            line = await caller_line(brain, caller_model, persona, played.transcript)
        if line is None:
            break
        played.history.add(Said("user", line))
        started = time.perf_counter()
        played.ended = await rounds(brain, tools, scene.prompt, played.history, typed)
        played.reply_ms.append(round((time.perf_counter() - started) * 1000))
        if played.ended:
            break
    return played


#: Audio mode's player (the engine's ``agent_audio.play_audio``): one repetition of a test,
#: spoken; ``(runtime, brain, config, commit_id, test, caller_model)``.
AudioPlayer = Callable[
    [Runtime, Brain, Mapping[str, Any], str, Mapping[str, Any], str | None], Awaitable[Played]
]
