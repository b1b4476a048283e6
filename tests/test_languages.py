"""Calls in other languages (docs/languages.md): agent ``languages`` presets, the brain told the
caller's language, ``switch_language``, transcript entries' ``language``, the config's checks,
voices by language, uploaded recordings identified by language, and a Spanish web call. The
simulated network carries text lines; recognition over SIP is in test_languages_sip.py."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from callplane.external_calls.processing import process_next_leg
from callplane.external_calls.transcription import LazyTranscriber
from tests.conftest import client_for
from tests.engine_support import FAST_ENGINE, agent_engine, create_call, wait_for_call
from tests.factories import make_org, runtime_of
from tests.hearing import heard_enough_of
from tests.llm_stub import Reply, StubLLM

SPANISH_OPENING = "Hola, soy Ada. ¿En qué puedo ayudarle?"


def _spoken_wav(text: str, voice: str) -> bytes:
    """``text`` as espeak-ng's ``voice`` says it, a WAV file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "speech.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), text], check=True, timeout=30)
        return path.read_bytes()


async def _agent_app(make_app: Any, brain: StubLLM, script: list[str]) -> FastAPI:
    app: FastAPI = await make_app(
        **{
            **FAST_ENGINE,
            "worker": "off",
            "simulated_call_seconds": 10,
            "simulated_script": script,
            "llm_base_url": brain.base_url,
            "llm_timeout_seconds": 5,
        }
    )
    return app


def _system(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")


def _streamed(brain: StubLLM) -> list[dict[str, Any]]:
    return [r for r in brain.requests if r.get("stream")]


async def test_a_spanish_call_opens_with_the_presets_first_message_and_tells_the_brain(
    make_app: Any,
) -> None:
    config = {
        "prompt": "You book tables.",
        "language": "es",
        "first_message": "Hello, this is Ada.",
        "languages": {"es": {"first_message": SPANISH_OPENING, "prompt": "Trate de usted."}},
    }
    with StubLLM(replies=["¿Sí?", Reply("Claro. ¡Adiós!", "end_call")]) as brain:
        app = await _agent_app(make_app, brain, ["Quisiera reservar una mesa para cuatro."])
        org = await make_org(app)
        async with agent_engine(app, config), client_for(app) as client:
            call_id = await create_call(client, org, "+14155550100")
            call = await wait_for_call(client, org, call_id)
        request = _streamed(brain)[0]

    said = [
        (e["role"], e["text"], e.get("language"))
        for e in call["transcripts"]
        if e["text"] and e["role"] != "tool"
    ]
    # The simulated person answers "Hello?" first.
    assert said[0] == ("assistant", SPANISH_OPENING, "es")
    assert ("user", "Quisiera reservar una mesa para cuatro.", "es") in said
    assert ("assistant", "Claro. ¡Adiós!", "es") in said
    assert {language for _, _, language in said} == {"es"}, said
    system = _system(request)
    assert "You book tables." in system and "Trate de usted." in system
    assert "Spanish" in system


async def test_an_english_call_keeps_its_plain_transcript(make_app: Any) -> None:
    with StubLLM(replies=[Reply("Sure. Goodbye!", "end_call")]) as brain:
        app = await _agent_app(make_app, brain, ["I need a table."])
        org = await make_org(app)
        async with agent_engine(app, {"prompt": "You book tables."}), client_for(app) as client:
            call_id = await create_call(client, org, "+14155550100", agent_speaks_first=False)
            call = await wait_for_call(client, org, call_id)
        [request] = _streamed(brain)
    assert all("language" not in e for e in call["transcripts"])
    assert "The caller speaks" not in _system(request)


async def test_switch_language_switches_at_once_and_the_summary_follows(make_app: Any) -> None:
    config = {
        "prompt": "You book tables.",
        "language": "auto",
        "tools": [{"type": "switch_language"}],
        "languages": {"es": {"prompt": "Trate de usted.", "end_call_phrases": ["hasta luego"]}},
    }
    with StubLLM(
        replies=[
            Reply("", "switch_language", {"language": "es"}),
            "Perfecto, hasta luego.",
        ],
        after_tool=["Claro, hablemos en español."],
    ) as brain:
        app = await _agent_app(
            make_app, brain, ["Can we speak Spanish, please?", "Sí, eso es todo."]
        )
        org = await make_org(app)
        async with agent_engine(app, config), client_for(app) as client:
            call_id = await create_call(client, org, "+14155550100", agent_speaks_first=False)
            call = await wait_for_call(client, org, call_id)
        streamed = _streamed(brain)
        summaries = [r for r in brain.requests if not r.get("stream")]

    said = [
        (e["role"], e.get("language"))
        for e in call["transcripts"]
        if e["text"] and e["role"] != "tool"
    ]
    tools = [e for e in call["transcripts"] if e.get("function_name") == "switch_language"]
    assert tools[0]["arguments"] == {"language": "es"}
    # The caller's English turn, then every line after the switch is in Spanish.
    assert said[0] == ("user", "en")
    first_reply = said.index(("assistant", "es"))
    assert all(language == "en" for _, language in said[:first_reply]), said
    assert all(language == "es" for _, language in said[first_reply:]), said
    assert ("user", "es") in said[first_reply:]
    assert "Spanish" not in _system(streamed[0])
    assert "Spanish" in _system(streamed[-1]) and "Trate de usted." in _system(streamed[-1])
    # The Spanish preset's end-call phrase ended the call.
    assert call["status"] == "completed"
    assert summaries and "Write the summary in Spanish." in _system(summaries[0]) + str(
        summaries[0]["messages"]
    )


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"languages": {"xx": {"first_message": "?"}}}, "config/languages/xx"),
        ({"languages": {"es": {"greeting": "Hola"}}}, "config/languages/es/greeting"),
        ({"summary_language": "klingon"}, "config/summary_language"),
    ],
)
async def test_unknown_languages_and_preset_keys_are_422(
    app: FastAPI, client: httpx.AsyncClient, config: dict[str, Any], path: str
) -> None:
    org = await make_org(app)
    response = await client.post(
        "/v1/agents", headers=org.headers, json={"name": "Ada", "config": config}
    )
    assert response.status_code == 422, response.text
    assert path in response.text


async def test_a_valid_preset_is_stored_as_written(app: FastAPI, client: httpx.AsyncClient) -> None:
    org = await make_org(app)
    config = {
        "language": "es-MX",
        "languages": {
            "es-MX": {"first_message": SPANISH_OPENING, "opt_out_phrases": ["no me llame"]}
        },
        "summary_language": "en",
    }
    response = await client.post(
        "/v1/agents", headers=org.headers, json={"name": "Ada", "config": config}
    )
    assert response.status_code == 201, response.text
    assert response.json()["agent"]["config"] == config


def test_voices_engines_filters_by_language() -> None:
    def listed(*args: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", "callplane.cli", "voices", "engines", *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]

    spanish = listed("--language", "es")
    assert "espeak-ng:es" in spanish and "espeak-ng:es-419" in spanish
    assert not any(name.startswith(("piper:en_", "espeak-ng:en")) for name in spanish)
    assert "piper:en_US-joe-medium" in listed("--language", "en-US")


@pytest.mark.parametrize(
    ("text", "voice", "language", "word"),
    [
        (
            "Buenos días, quisiera cambiar mi cita para el jueves por la tarde.",
            "es",
            "es",
            "jueves",
        ),
        ("Please call me back tomorrow morning about the invoice.", "en-us", "en", "invoice"),
        (
            "Bonjour, je voudrais changer mon rendez-vous de jeudi après-midi.",
            "fr",
            "fr",
            "rendez-vous",
        ),
    ],
)
async def test_an_uploaded_recording_gets_the_language_it_is_in(
    app: FastAPI, client: httpx.AsyncClient, text: str, voice: str, language: str, word: str
) -> None:
    org = await make_org(app)
    created = await client.post("/v1/external_calls", json={}, headers=org.headers)
    assert created.status_code == 201, created.text
    call_id = created.json()["id"]
    response = await client.post(
        f"/v1/external_calls/{call_id}/recordings",
        content=_spoken_wav(text, voice),
        headers={**org.headers, "Content-Type": "audio/wav"},
    )
    assert response.status_code in (200, 201, 202), response.text
    runtime = runtime_of(app)
    assert await process_next_leg(runtime, LazyTranscriber(runtime.settings))
    body = (await client.get(f"/v1/external_calls/{call_id}", headers=org.headers)).json()
    [leg] = body["recordings"]
    assert leg["status"] == "transcribed", leg
    assert leg["transcript"] and {e["language"] for e in leg["transcript"]} == {language}
    assert word in " ".join(e["text"] for e in leg["transcript"]).lower()


def test_which_model_hears_which_call() -> None:
    from callplane.settings import Settings
    from callplane.speech.models import installed_base_dir, model_dir

    base = str(installed_base_dir())
    default = Settings(_env_file=None)  # type: ignore[call-arg]
    assert default.whisper_model == "tiny.en"
    assert model_dir(default, "en-US") is None  # the bundled tiny.en
    assert model_dir(default, "es") == model_dir(default, "auto") == base
    everything = Settings(_env_file=None, whisper_model="base")  # type: ignore[call-arg]
    assert model_dir(everything, "en") == model_dir(everything, "fr") == base
    mine = Settings(_env_file=None, whisper_model="/srv/whisper-small")  # type: ignore[call-arg]
    assert model_dir(mine, "en") == model_dir(mine, "de") == "/srv/whisper-small"


def test_the_install_refuses_a_model_that_is_not_the_published_one(tmp_path: Path) -> None:
    import runpy

    script = runpy.run_path(str(Path(__file__).parent.parent / "scripts/install_whisper_base.py"))
    main, expected = script["main"], script["EXPECTED"]
    target = tmp_path / "whisper-base"
    globals_ = main.__globals__
    saved = globals_["TARGET"], dict(expected)
    try:
        globals_["TARGET"] = target
        assert main() == 0 and (target / "model.bin").is_file()  # the real parts, joined
        expected["model.bin"] = "0" * 64
        globals_["TARGET"] = tmp_path / "refused"
        assert main() == 1
        assert not (tmp_path / "refused").exists()
        assert not (tmp_path / "refused.partial").exists()
    finally:
        globals_["TARGET"] = saved[0]
        expected.clear()
        expected.update(saved[1])


@pytest.mark.realtime
async def test_a_spanish_caller_in_a_web_call_is_answered_in_spanish(
    make_app: Any,
) -> None:
    import asyncio

    from callplane.speech.synthesis import EspeakSynthesizer
    from tests.agents_support import create_agent
    from tests.test_web_calls import _until as web_until
    from tests.web_call_peer import Peer

    answer = "Claro, una mesa para cuatro personas. ¡Hasta luego!"
    config = {"prompt": "Reserva mesas.", "language": "es", "agent_speaks_first": False}
    # The browser's microphone: Spanish at WebRTC's 48 kHz.
    line = "Quisiera reservar una mesa para cuatro personas el viernes."
    said = EspeakSynthesizer(voice="es", words_per_minute=120).synthesize(line, 48_000)
    peer = Peer(bytes(48_000) + said)
    with StubLLM(replies=[Reply(answer, "end_call")]) as brain:
        app = await make_app(
            web_call_connect_seconds=10, llm_base_url=brain.base_url, llm_timeout_seconds=10
        )
        org = await make_org(app)
        try:
            async with client_for(app) as client:
                agent = await create_agent(client, org, config)
                made = await client.post(
                    "/v1/web_calls",
                    json={"agent_id": agent["id"], "sdp": await peer.offer()},
                    headers=org.headers,
                )
                assert made.status_code == 201, made.text
                await peer.accept(made.json()["sdp"])
                await asyncio.wait_for(peer.opened.wait(), 60)
                call = await web_until(client, org, made.json()["call_id"], within=90)
        finally:
            await peer.close()

    [user] = [e for e in call["transcripts"] if e["role"] == "user"]
    assert user["language"] == "es", user
    assert heard_enough_of(line, user["text"]), user
    replies = [e for e in call["transcripts"] if e["role"] == "assistant" and e["text"]]
    assert [(e["text"], e["language"]) for e in replies] == [(answer, "es")]
