"""Smart end of turn (docs/voices.md#end-of-turn): what the caller said so far decides how long
their silence must last; ``silence`` keeps the fixed 500 ms. The listener runs on real espeak-ng
speech with the real Whisper model; the pauses are the caller's (no audio sent), heard as the line's
silence."""

from __future__ import annotations

import asyncio
import time
from array import array
from collections.abc import AsyncIterator

import pytest

from callplane.engine.conversation.endpointing import Endpointing, classify
from callplane.engine.conversation.listening import CallerSaid, Listener
from callplane.settings import Settings
from callplane.speech.synthesis import EspeakSynthesizer
from callplane.telephony.base import FRAME_BYTES, AudioFrame, Frame
from tests.audio import transcriber
from tests.fakes import ListeningLine


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Quiero reservar una cita para", "incomplete"),
        ("Quiero una cita para el viernes.", "complete"),
        ("¿Puede ayudarme?", "complete"),
        ("Je voudrais réserver pour", "incomplete"),
        ("Je voudrais un café.", "complete"),
        ("Ich möchte einen Termin für", "incomplete"),
        ("Das bin ich.", "complete"),
        ("Eu queria marcar uma consulta para", "incomplete"),
        ("Mi número es 415", "number"),
        ("予約したいです。", "complete"),
        ("J'ai une question.", "complete"),
    ],
)
def test_other_languages_end_their_sentences_their_own_way(text: str, kind: str) -> None:
    assert classify(text) == kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I'd like to book a cleaning.", "complete"),
        ("Thank you.", "complete"),
        ("Is Friday free?", "complete"),
        ("Yes!", "complete"),
        ("My number is 415.", "number"),
        ("It's four one five", "number"),
        ("Call me at 3:30", "number"),
        ("I'd like to.", "incomplete"),  # Whisper's period on a fragment
        ("My number is...", "incomplete"),
        ("I'd like to …", "incomplete"),
        ("Well, um,", "incomplete"),
        ("Can I speak with the", "incomplete"),
        ("book a cleaning", "unpunctuated"),  # no sentence end, but it could be one
        ("can you send me a reminder by text message", "unpunctuated"),
        ("I'd like to book a", "incomplete"),  # no sentence ends on "a"
        ("That works for me,", "incomplete"),
        ("", "incomplete"),
        ("   ", "incomplete"),
        ('"?!"', "incomplete"),
    ],
)
def test_what_the_text_sounds_like(text: str, kind: str) -> None:
    assert classify(text) == kind


def test_the_waits_of_both_modes() -> None:
    smart = Endpointing()
    assert (smart.pause_ms, smart.longest_ms) == (120, 800)  # the guess starts before any wait ends
    assert smart.wait_ms("Thank you.") == 200
    assert smart.wait_ms("My number is 415") == 600
    assert smart.wait_ms("I'd like to") == 800
    assert smart.wait_ms("send me a reminder by text message") == 800  # text alone: unfinished
    silence = Endpointing(mode="silence")
    assert {silence.wait_ms(t) for t in ("Thank you.", "415", "I'd like to")} == {500}
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        endpointing="smart",
        end_of_turn_ms_complete=300,
        end_of_turn_ms_incomplete=1200,
        end_of_turn_ms_number=900,
    )
    tuned = Endpointing.from_settings(settings)
    assert (tuned.pause_ms, tuned.longest_ms, tuned.wait_ms("415")) == (120, 1200, 900)
    assert tuned.unsure_ms == Settings.model_fields["end_of_turn_ms_unsure"].default == 400
    assert Endpointing(complete_ms=100).pause_ms == 100


def test_model_mode_ends_a_turn_soonest_when_voice_and_words_agree() -> None:
    model = Endpointing(mode="model")
    assert model.wait_ms("Thank you.", 0.93) == 200
    assert model.wait_ms("My number is 415", 0.8) == 200
    assert model.wait_ms("My number is 415", 0.1) == 600
    # Both say it goes on: the longest wait.
    assert model.wait_ms("send me a reminder by text message", 0.2) == 800
    # Words that say it goes on hold the turn whatever the voice.
    assert model.wait_ms("I'd like to", 0.9) == 800
    assert model.wait_ms("That works for me,", 0.99) == 800
    assert model.wait_ms("", 0.99) == 800
    # Without the model's verdict (not installed, or it failed) the words alone decide.
    assert [model.wait_ms(t) for t in ("Thank you.", "415", "I'd like to")] == [200, 600, 800]


def test_model_mode_waits_a_middle_length_when_voice_and_words_disagree() -> None:
    model = Endpointing(mode="model")
    # A finished sentence in a voice the model hears as unfinished (espeak-ng's, often).
    assert model.wait_ms("Nine o'clock would be great, thank you.", 0.02) == 400
    assert model.wait_ms("That works for me.", 0.49) == 400
    # A finished-sounding voice whose words Whisper left without their question mark.
    assert model.wait_ms("can you also send me a reminder by text message", 0.85) == 400
    # The threshold is the model's own: 0.5 is finished.
    assert model.wait_ms("book a cleaning", 0.5) == 400
    assert model.wait_ms("book a cleaning", 0.49) == 800
    # Smart mode has no voice to disagree with: the text alone.
    smart = Endpointing(mode="smart")
    assert smart.wait_ms("Nine o'clock would be great, thank you.", 0.02) == 200


@pytest.mark.parametrize(
    ("waits", "unsure"),
    [
        ({}, 400),
        ({"unsure_ms": 300}, 300),
        # Never shorter than a turn both say is over, nor longer than one both say goes on.
        ({"complete_ms": 700}, 700),
        ({"unsure_ms": 1000}, 800),
        ({"unsure_ms": 1000, "incomplete_ms": 1200}, 1000),
    ],
)
def test_the_middle_wait_stays_between_the_others(waits: dict[str, int], unsure: int) -> None:
    model = Endpointing(mode="model", **waits)
    assert model.disagreeing_ms == unsure
    assert model.wait_ms("That works for me.", 0.1) == unsure
    assert model.wait_ms("send me a reminder", 0.9) == unsure
    assert model.longest_ms == max(800, waits.get("incomplete_ms", 800))


class PausingCaller(ListeningLine):
    """Speech sent as fast as it is read; pauses as nothing sent, for as long as they last.
    After the last part the line stays open (silent) until the test has heard the last turn:
    recognition on a busy machine may take seconds, and a hang-up would cut it short."""

    def __init__(self, parts: list[bytes | float]) -> None:
        super().__init__()
        self._parts = parts
        self.heard_all = asyncio.Event()
        self.last_speech_at = 0.0

    async def frames(self) -> AsyncIterator[Frame]:
        for part in self._parts:
            if isinstance(part, float):
                await asyncio.sleep(part)
                continue
            for offset in range(0, len(part), FRAME_BYTES):
                yield AudioFrame(part[offset : offset + FRAME_BYTES])
            self.last_speech_at = time.monotonic()
        await asyncio.wait_for(self.heard_all.wait(), timeout=60)


def _said(text: str) -> bytes:
    """espeak-ng at the telephone rate, its trailing silence cut (the pause is the test's)."""
    samples = array("h", EspeakSynthesizer(words_per_minute=150).synthesize(text, 8000))
    end = len(samples)
    while end and abs(samples[end - 1]) < 300:
        end -= 1
    return samples[:end].tobytes()


async def _turns(parts: list[bytes | float], endpointing: Endpointing) -> list[str]:
    caller = PausingCaller(parts)
    listener = Listener(caller, transcriber=transcriber(), endpointing=endpointing)
    turns = []
    async for event in listener.events():
        if isinstance(event, CallerSaid):
            turns.append(event.text)
            # The turn that ends after the last words (an earlier cut ends ~0.6 s before).
            if caller.last_speech_at and event.ended_at > caller.last_speech_at - 0.3:
                caller.heard_all.set()
    return turns


@pytest.mark.slow  # five Whisper recognitions in real time: ~4 s idle, 20 s on a loaded machine
async def test_a_caller_who_pauses_mid_sentence_is_not_cut_off() -> None:
    # "My number is … 415 555 0132": 650 ms of thought after "is". Silence cuts there (500 ms);
    # smart waits on, since "my number is" ends no sentence (800 ms).
    parts: list[bytes | float] = [
        _said("My phone number is"),
        0.65,
        _said("four one five, five five five, zero one three two."),
        1.0,
    ]
    smart = await _turns(parts, Endpointing())
    silence = await _turns(parts, Endpointing(mode="silence"))
    model = await _turns(parts, Endpointing(mode="model"))

    assert len(smart) == 1, smart
    assert len(silence) == 2, silence
    assert len(model) == 1, model


async def test_a_finished_sentence_ends_the_turn_in_every_mode() -> None:
    parts: list[bytes | float] = [_said("I would like to book a cleaning, please."), 1.0]
    for mode in ("model", "smart", "silence"):
        [said] = await _turns(parts, Endpointing(mode=mode))  # type: ignore[arg-type]
        assert "please" in said.lower()
