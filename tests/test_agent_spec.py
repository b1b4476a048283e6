"""The frozen AgentSpec (engine/agent.py): deployment settings < the agent's commit < the
call's own fields, templates rendered once, and the ``agent.started`` event a worker writes."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from callplane.engine.agent import AgentCommit, AgentSpec, Voicemail, resolve_agent_spec
from callplane.engine.worker import Engine
from callplane.settings import Settings
from tests.conftest import client_for
from tests.engine_support import FAST_ENGINE, create_call, events_of, wait_for_call
from tests.factories import make_org, runtime_of

VOICE = uuid.UUID("00000000-0000-4000-8000-000000000001")


@dataclass
class Fields:
    call_prompt: str | None = None
    first_message: str | None = None
    agent_speaks_first: bool | None = None
    voice_uuid: uuid.UUID | None = None
    language: str | None = None
    keyterms: list[str] = field(default_factory=list)
    analyzers: list[Any] = field(default_factory=list)


def _settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def render_from(values: dict[str, str]) -> Any:
    def render(template: str) -> tuple[str, Sequence[str]]:
        missing: list[str] = []

        def one(match: re.Match[str]) -> str:
            name = match.group(1).strip()
            if name not in values:
                missing.append(name)
            return values.get(name, "")

        return re.sub(r"\{\{([^}]*)\}\}", one, template), missing

    return render


COMMIT = {
    "prompt": "You help {{name}} with {{topic}}.",
    "first_message": "Hi {{name}}!",
    "agent_speaks_first": False,
    "voice_id": str(VOICE),
    "language": "de",
    "keyterms": ["Acme"],
    "model": "big-model",
    "temperature": 0.2,
    "max_duration_seconds": 60,
    "silence_timeout_seconds": 12,
    "end_call_phrases": ["goodbye"],
    "voicemail": {"action": "leave_message", "message": "Call {{name}} back, {{city}}."},
    "summary_prompt": "Mention the order number.",
    "analyzers": [{"prompt": "mood?", "output_config": {"type": "object"}}],
}


def test_settings_alone_give_the_defaults_of_a_call_without_an_agent() -> None:
    spec = resolve_agent_spec(_settings(llm_model="small", max_call_seconds=99), Fields())
    assert spec == AgentSpec(model="small", max_duration_seconds=99.0)
    assert spec.voicemail is None and spec.silence_timeout_seconds is None


def test_the_commit_overrides_settings_and_its_templates_are_rendered() -> None:
    spec = resolve_agent_spec(
        _settings(llm_model="small"),
        Fields(),
        COMMIT,
        commit_id="c1",
        render=render_from({"name": "Dana"}),
    )
    assert spec.prompt == "You help Dana with ."
    assert spec.first_message == "Hi Dana!"
    assert spec.agent_speaks_first is False
    assert (spec.voice_id, spec.language, spec.keyterms) == (VOICE, "de", ("Acme",))
    assert (spec.model, spec.temperature, spec.max_duration_seconds) == ("big-model", 0.2, 60.0)
    assert spec.silence_timeout_seconds == 12.0
    assert spec.voicemail == Voicemail("leave_message", "Call Dana back, .")
    assert spec.summary_prompt == "Mention the order number."
    assert spec.commit_id == "c1"
    assert spec.missing_variables == ("city", "topic")
    assert spec.ends_the_call("OK, GoodBye now")


def test_the_calls_own_fields_override_the_commit_and_analyzers_add() -> None:
    call = Fields(
        call_prompt="Be brief.",
        first_message="Hello.",
        agent_speaks_first=True,
        voice_uuid=uuid.UUID(int=7),
        language="fr",
        keyterms=["Globex"],
        analyzers=[{"prompt": "call's own"}],
    )
    spec = resolve_agent_spec(_settings(), call, COMMIT)
    assert (spec.prompt, spec.first_message, spec.agent_speaks_first) == (
        "Be brief.",
        "Hello.",
        True,
    )
    assert (spec.voice_id, spec.language, spec.keyterms) == (uuid.UUID(int=7), "fr", ("Globex",))
    assert [a["prompt"] for a in spec.analyzers] == ["call's own", "mood?"]


def test_an_agent_config_without_the_keys_takes_design_defaults() -> None:
    spec = resolve_agent_spec(_settings(), Fields(), {})
    assert spec.voicemail == Voicemail("hang_up", "")
    assert spec.silence_timeout_seconds == 30.0


async def test_a_worker_writes_agent_started_with_the_commit_and_missing_variables(make_app):
    app = await make_app(**{**FAST_ENGINE, "worker": "off"})
    org = await make_org(app)
    seen: list[Any] = []

    async def agents(_runtime: Any, call: Any) -> AgentCommit:
        seen.append(call.call_id)
        config = {"first_message": "Hi {{name}}, about {{order}}.", "variables": {}}
        return AgentCommit("commit-1", config, render_from({"name": "Dana"}))

    engine = Engine(runtime_of(app), agents=agents)
    await engine.start()
    try:
        async with client_for(app) as client:
            call_id = await create_call(client, org, "+14155550100")
            call = await wait_for_call(client, org, call_id)
            events = await events_of(client, org, call_id)
    finally:
        await engine.stop()
    assert [str(c) for c in seen] == [call_id]
    [started] = [e for e in events if e["type"] == "agent.started"]
    assert started["data"] == {"commit_id": "commit-1", "missing_variables": ["order"]}
    assert call["transcripts"][0]["text"] == "Hi Dana, about ."


def test_a_stored_key_that_breaks_todays_rules_is_left_out_not_the_call() -> None:
    stored = {
        "prompt": "Hello.",
        "temperature": 9,
        "tools": [{"type": "send_dtmf", "name": "send_dtmf"}, {"type": "gone", "name": "gone"}],
    }
    spec = resolve_agent_spec(_settings(), Fields(), stored)
    assert spec.prompt == "Hello." and spec.temperature is None
    assert spec.tools == ({"type": "send_dtmf", "name": "send_dtmf"},)
    garbled = resolve_agent_spec(_settings(), Fields(), {"tools": 5, "keyterms": "x"})
    assert garbled.tools == () and garbled.keyterms == ()
