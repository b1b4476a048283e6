"""answered_by detection on real speech: a short "Hello?" is a person, a greeting a machine."""

from __future__ import annotations

import pytest

from callplane.speech.answering import AnsweringDetector, classify
from callplane.speech.synthesis import EspeakSynthesizer
from tests.sipp_peer import tone_pcm

RATE = 8000


def _silence(seconds: float) -> bytes:
    return bytes(int(RATE * seconds) * 2)


@pytest.fixture(scope="module")
def speak() -> EspeakSynthesizer:
    return EspeakSynthesizer()


def test_a_short_hello_then_waiting_is_a_person(speak: EspeakSynthesizer) -> None:
    audio = _silence(0.4) + speak.synthesize("Hello?", RATE) + _silence(2.0)
    assert classify(audio) == "human"


def test_two_hellos_with_a_pause_are_still_a_person(speak: EspeakSynthesizer) -> None:
    hello = speak.synthesize("Hello?", RATE)
    assert classify(hello + _silence(1.0) + hello + _silence(1.5)) == "human"


def test_a_voicemail_greeting_is_a_machine(speak: EspeakSynthesizer) -> None:
    greeting = speak.synthesize(
        "Hi, you have reached Dana Whitfield. I can't take your call right now, "
        "please leave a message after the tone and I will call you back.",
        RATE,
    )
    detector = AnsweringDetector()
    verdicts = [detector.feed(greeting[i : i + 320]) for i in range(0, len(greeting), 320)]
    assert "voicemail" in verdicts
    # Decided while the greeting is still playing, soon after a greeting's length.
    assert detector.decided_after_seconds < 4.0


def test_silence_is_a_person_who_waits() -> None:
    detector = AnsweringDetector()
    verdict = None
    for _ in range(200):
        verdict = detector.feed(bytes(320))
        if verdict:
            break
    assert verdict == "human"
    assert detector.decided_after_seconds == pytest.approx(3.0)


def test_a_long_tone_without_pause_counts_as_a_greeting() -> None:
    assert classify(tone_pcm(440, 4.0)) == "voicemail"
    assert classify(tone_pcm(440, 1.0) + _silence(1.0)) == "human"
