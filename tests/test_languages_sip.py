"""Callers in Spanish and French on real SIP calls (SIPp on loopback playing espeak-ng): the
multilingual model hears them, the agent answers in a Spanish voice, and an ``auto`` call
switches from English to Spanish on a full Spanish sentence, not on a lone "sí"
(docs/languages.md)."""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

from callplane.speech.synthesis import EspeakSynthesizer
from callplane.speech.transcriber import shared_transcriber
from tests.conftest import AppFactory, client_for
from tests.factories import make_org, runtime_of
from tests.hearing import heard_enough_of
from tests.llm_stub import Reply, StubLLM
from tests.sipp_peer import answer_scenario, pcmu_file, requires_sipp, start_sipp, wav_channels
from tests.test_sip_calls import TERMINAL, _place, _recording, _sip_app, _until

pytestmark = requires_sipp

RATE = 8000


#: espeak-ng's Spanish is hard to follow at its usual pace over a telephone line (the recogniser
#: hears "miernes" for "viernes"): the callers speak slowly, as to a machine.
SPANISH = "Quisiera reservar una mesa para cuatro personas el viernes."


def _speech(text: str, voice: str) -> bytes:
    return EspeakSynthesizer(voice=voice, words_per_minute=120).synthesize(text, RATE)


def _silence(seconds: float) -> bytes:
    return bytes(int(seconds * RATE) * 2)


def _system(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")


async def _call(
    make_app: AppFactory, tmp_path: Path, brain: StubLLM, caller: bytes, **fields: Any
) -> tuple[dict[str, Any], bytes, Any]:
    audio = pcmu_file(_silence(0.3) + caller, tmp_path, "caller.pcmu")
    # Generous limits: recognition on a loaded 2-core machine can take seconds per turn.
    sipp = await start_sipp(answer_scenario(tmp_path, audio, hangup="near"), timeout_seconds=90)
    app = await _sip_app(
        make_app,
        sip_trunk=f"sip:127.0.0.1:{sipp.port}",
        llm_base_url=brain.base_url,
        llm_timeout_seconds=10,
        max_call_seconds=40,
    )
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await _place(client, org, agent_speaks_first=False, **fields)
        call, _ = await _until(client, org, call_id, TERMINAL, within=80)
        await sipp.finish_ok()
        data = await _recording(client, call)
    return call, data, app


async def test_a_spanish_caller_is_understood_and_answered_in_spanish(
    make_app: AppFactory, tmp_path: Path
) -> None:
    answer = "Claro, una mesa para cuatro personas el viernes. ¡Hasta luego!"
    with StubLLM(replies=[Reply(answer, "end_call")]) as brain:
        caller = _speech(SPANISH, "es")
        call, data, app = await _call(
            make_app, tmp_path, brain, caller, language="es", keyterms=["mesa", "viernes"]
        )
        request = next(r for r in brain.requests if r.get("stream"))

    assert call["status"] == "completed"
    [user] = [e for e in call["transcripts"] if e["role"] == "user"]
    heard = user["text"].lower()
    # Whisper base makes a fair few errors on espeak-ng's Spanish at 8 kHz ("miernes"), but it
    # hears Spanish words, not English gibberish.
    assert heard_enough_of(SPANISH, heard), heard
    assert user["language"] == "es"
    assert "Spanish" in _system(request)
    [reply] = [e for e in call["transcripts"] if e["role"] == "assistant" and e["text"]]
    assert reply == {**reply, "text": answer, "language": "es"}

    # What the caller heard is Spanish: the recogniser, asked to tell, says so.
    agent, _, _ = wav_channels(data)
    settings = runtime_of(app).settings
    recogniser = shared_transcriber(settings, "batch", "auto")
    segments = recogniser.transcribe(array("h", agent).tobytes(), RATE, language=None)
    assert segments and segments[0].language == "es", segments


async def test_auto_switches_to_spanish_on_a_sentence_not_on_a_lone_si(
    make_app: AppFactory, tmp_path: Path
) -> None:
    replies = [
        "Sure, for how many people?",
        "Okay.",
        Reply("Perfecto, una mesa para cuatro. ¡Hasta luego!", "end_call"),
    ]
    with StubLLM(replies=replies) as brain:
        caller = (
            _speech("I would like to book a table for Friday evening.", "en-us")
            + _silence(5.0)
            + _speech("Sí.", "es")
            + _silence(5.0)
            + _speech(SPANISH, "es")
        )
        call, _, _ = await _call(make_app, tmp_path, brain, caller, language="auto")
        streamed = [r for r in brain.requests if r.get("stream")]

    users = [e for e in call["transcripts"] if e["role"] == "user"]
    assert len(users) == 3, call["transcripts"]
    english, yes, spanish = users
    assert english["language"] == "en"
    # One word is not enough to switch, however sure the model is of its language.
    assert len(yes["text"].split()) < 3 and yes["language"] == "en", yes
    assert spanish["language"] == "es" and heard_enough_of(SPANISH, spanish["text"]), spanish
    # The last request of each turn (one asked on a pause's words, a speculative reply, may
    # come before it: the end-of-turn model waits longer after some pauses, time to ask).
    asked = {_users(r): r for r in streamed}
    assert sorted(asked) == [1, 2, 3]
    assert "English" in _system(asked[2]) and "Spanish" not in _system(asked[2])
    assert "Spanish" in _system(asked[3])
    last = [e for e in call["transcripts"] if e["role"] == "assistant" and e["text"]][-1]
    assert last["language"] == "es"


async def test_a_french_caller_is_understood_and_answered_in_french(
    make_app: AppFactory, tmp_path: Path
) -> None:
    answer = "Bien sûr, une table pour quatre personnes vendredi. Au revoir !"
    with StubLLM(replies=[Reply(answer, "end_call")]) as brain:
        caller = _speech("Je voudrais réserver une table pour quatre personnes vendredi.", "fr")
        call, data, app = await _call(
            make_app, tmp_path, brain, caller, language="fr", keyterms=["table", "vendredi"]
        )
        request = next(r for r in brain.requests if r.get("stream"))

    assert call["status"] == "completed"
    [user] = [e for e in call["transcripts"] if e["role"] == "user"]
    heard = user["text"].lower()
    # French words, not English gibberish: espeak-ng's French at 8 kHz costs many words ("et une
    # bonne réénère, mille table"), so one of the caller's is asked for. Told nothing, Whisper
    # base takes that audio for Thai (0.75-0.85): a French call names its language (see
    # docs/languages.md), `auto` is not trusted with it.
    assert any(word in heard for word in ("table", "quatre", "personne", "vendredi")), heard
    assert user["language"] == "fr"
    assert "French" in _system(request)
    [reply] = [e for e in call["transcripts"] if e["role"] == "assistant" and e["text"]]
    assert reply == {**reply, "text": answer, "language": "fr"}


def _users(request: dict[str, Any]) -> int:
    return sum(1 for m in request["messages"] if m["role"] == "user")
