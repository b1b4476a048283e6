"""answered_by detection on real speech: a short "Hello?" is a person, a greeting (its length,
its beep, its words) a machine; and when a voicemail greeting is over."""

from __future__ import annotations

import pytest

from callplane.speech.answering import AnsweringDetector, GreetingEnd, classify, mailbox_words
from callplane.speech.synthesis import EspeakSynthesizer
from tests.sipp_peer import tone_pcm
from tests.speech_audio import noise, spoken

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


def test_a_long_sound_without_pause_counts_as_a_greeting() -> None:
    assert classify(noise(4.0, 3000)) == "voicemail"
    assert classify(noise(1.0, 3000) + _silence(1.0)) == "human"


def test_a_beep_makes_it_a_voicemail_before_any_greeting_rule() -> None:
    detector = AnsweringDetector()
    audio = _silence(0.3) + tone_pcm(1000, 0.4)
    verdicts = [detector.feed(audio[i : i + 320]) for i in range(0, len(audio), 320)]
    assert verdicts[-1] == "voicemail" and detector.reason == "beep"
    # Decided while the tone sounds, 150 ms into it (not at the greeting rule's 2.5 s).
    assert detector.decided_after_seconds == pytest.approx(0.3 + 0.15, abs=0.03)


@pytest.mark.parametrize(
    "text",
    [
        "Hi, you've reached Sam. Please leave a message after the tone.",
        "Sam\u2019s voicemail.",
        "The person you are calling is not available.",
        "The mailbox is full.",
        "I can't take your call right now.",
        "Record your message at the beep.",
    ],
)
def test_mailbox_words_are_a_voicemail(text: str) -> None:
    assert mailbox_words(text)
    detector = AnsweringDetector()
    assert detector.heard(text) == "voicemail" and detector.reason == "words"


@pytest.mark.parametrize(
    "text", ["Hello?", "Yes, this is Sam.", "Who's calling?", "I'm available now", ""]
)
def test_ordinary_answers_hold_no_mailbox_words(text: str) -> None:
    assert not mailbox_words(text)
    assert AnsweringDetector().heard(text) is None


def test_words_overrule_a_short_greeting_taken_for_a_person(speak: EspeakSynthesizer) -> None:
    detector = AnsweringDetector()
    audio = speak.synthesize("Sam's voicemail.", RATE) + _silence(1.0)
    verdict = None
    for i in range(0, len(audio), 320):
        verdict = detector.feed(audio[i : i + 320]) or verdict
    assert verdict == "human" and detector.reason == "pause"
    assert not detector.overrule("Hello?")
    assert detector.overrule("Sam's voicemail.") and detector.verdict == "voicemail"
    assert len(detector.utterance) > 0  # what the recogniser is given


def _greeting_over(audio: bytes, chunk: int = 320) -> GreetingEnd:
    greeting = GreetingEnd()
    for i in range(0, len(audio), chunk):
        if greeting.feed(audio[i : i + chunk]):
            break
    return greeting


def test_a_greeting_is_over_when_its_beep_stops(speak: EspeakSynthesizer) -> None:
    words = speak.synthesize("Please leave a message after the tone.", RATE)
    audio = words + _silence(0.3) + tone_pcm(1000, 0.4) + _silence(3.0)
    greeting = _greeting_over(audio)
    assert greeting.done and greeting.beep is not None
    beep_ends = (len(words) + len(_silence(0.7))) / 2 / RATE
    # Right after the beep (not 1.5 s later), and never before it stopped.
    assert beep_ends <= greeting.heard_seconds <= beep_ends + 0.06


def test_a_greeting_without_a_beep_is_over_after_quiet() -> None:
    words = spoken("Please leave a message.")  # without espeak's trailing silence
    # Fed in the listener's uneven stretches (a line's gaps come as 100 ms of silence).
    greeting = _greeting_over(words + _silence(3.0), chunk=800)
    assert greeting.done and greeting.beep is None
    assert greeting.heard_seconds == pytest.approx(len(words) / 2 / RATE + 1.5, abs=0.1)


def test_a_greeting_with_short_pauses_is_not_over(speak: EspeakSynthesizer) -> None:
    words = speak.synthesize("Hi, this is Sam.", RATE)
    assert not _greeting_over(words + _silence(1.0) + words + _silence(1.0)).done
