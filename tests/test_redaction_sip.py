"""Redaction on a real SIP call (SIPp on loopback as the phone): the caller says a card number,
the agent's ``redaction`` with ``recordings`` keeps it out of the transcript, and the stored
recording, recognised again, holds no digits of it (docs/privacy.md#redaction)."""

from __future__ import annotations

import re
from array import array
from pathlib import Path

from callplane.privacy.spoken import normalise
from callplane.speech.synthesis import EspeakSynthesizer
from callplane.speech.transcriber import shared_transcriber
from tests.agents_support import create_agent
from tests.conftest import AppFactory, client_for
from tests.factories import make_org, runtime_of
from tests.hearing import words
from tests.llm_stub import Reply, StubLLM
from tests.sipp_peer import answer_scenario, pcmu_file, requires_sipp, start_sipp, wav_channels
from tests.test_sip_calls import TERMINAL, _place, _recording, _sip_app, _until

pytestmark = requires_sipp

RATE = 8000
#: 4539 1488 0343 6467, a Luhn-valid test number: varied digits, which a small recogniser hears
#: better than a repeated one (it turns "one one one one" into "41, 41, 41 …").
CARD = "4539148803436467"
SAID = (
    "My card number is four five three nine, one four eight eight, zero three four three, "
    "six four six seven."
)


def _silence(seconds: float) -> bytes:
    return bytes(int(seconds * RATE) * 2)


def _digit_groups(text: str) -> list[str]:
    """Every run of three or more digits in ``text``, numbers said as words included."""
    return re.findall(r"\d(?:[\s,.-]*\d){2,}", normalise(text).text)


async def test_a_card_said_on_a_call_is_toned_out_of_the_stored_recording(
    make_app: AppFactory, tmp_path: Path
) -> None:
    speak = EspeakSynthesizer().synthesize
    # A short "Hello?" first: a long monologue at the answer is taken for a voicemail greeting.
    caller = _silence(0.3) + speak("Hello?", RATE) + _silence(2.5) + speak(SAID, RATE)
    audio = pcmu_file(caller, tmp_path, "caller.pcmu")
    # Generous limits: recognition on a loaded 2-core machine can take seconds per turn.
    sipp = await start_sipp(answer_scenario(tmp_path, audio, hangup="near"), timeout_seconds=90)
    replies = ["Hi, how can I help?", Reply("Thank you, that is noted. Goodbye!", "end_call")]
    with StubLLM(replies=replies) as brain:
        app = await _sip_app(
            make_app,
            sip_trunk=f"sip:127.0.0.1:{sipp.port}",
            llm_base_url=brain.base_url,
            llm_timeout_seconds=10,
            max_call_seconds=40,
        )
        org = await make_org(app)
        async with client_for(app) as client:
            agent = await create_agent(
                client,
                org,
                {
                    "agent_speaks_first": False,
                    "redaction": {"entities": ["credit_card"], "recordings": True},
                },
            )
            call_id = await _place(client, org, agent_id=agent["id"], keyterms=["card"])
            call, _ = await _until(client, org, call_id, TERMINAL, within=80)
            await sipp.finish_ok()
            data = await _recording(client, call)

    assert call["status"] == "completed"
    # The live recogniser may mishear a digit (then the Luhn check fails and the text keeps
    # what it heard, which is not the card); either way the card itself is not in the text.
    said = " ".join(e["text"] for e in call["transcripts"] if e["role"] == "user")
    assert "card" in said.lower() and CARD not in re.sub(r"\D", "", normalise(said).text), said

    # The caller's side of the recording, recognised again with word times: no digits.
    agent_side, far_end, _ = wav_channels(data)
    recogniser = shared_transcriber(runtime_of(app).settings, "batch")
    heard = " ".join(
        s.text for s in recogniser.transcribe(array("h", far_end).tobytes(), RATE, language="en")
    )
    assert _digit_groups(heard) == [], heard
    # Only the card's line was toned, not the caller's whole side: the rest is still there to
    # hear. (The card's words are placed by a second recognition after the call; where it cannot
    # place them, on a loaded machine, the whole line is toned, never kept: so no word of the
    # line itself is required here.)
    assert words(heard), heard
    # The agent's reply is still there to hear.
    assert any(agent_side), "the agent's side is silent"
