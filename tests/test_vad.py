"""Voice activity and end of turn on generated telephone audio (espeak-ng speech, noise)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from callplane.speech.vad import (
    EnergyClassifier,
    FrameClassifier,
    SpeechPaused,
    SpeechStarted,
    TurnDetector,
    TurnEnded,
    TurnEvent,
    WebRtcClassifier,
)
from tests.speech_audio import RATE, mixed, noise, silence, spoken

CLASSIFIERS: dict[str, Callable[[], FrameClassifier]] = {
    "webrtc": WebRtcClassifier,
    "energy": EnergyClassifier,
}
SENTENCE = "I would like to move my appointment to Friday morning, please."


@pytest.fixture(scope="module")
def sentence() -> bytes:
    return spoken(SENTENCE)


def _feed(detector: TurnDetector, pcm: bytes, chunk: int = 333) -> list[TurnEvent]:
    # Odd chunk sizes: the detector re-cuts whatever the network delivers into 20 ms frames.
    return [e for i in range(0, len(pcm), chunk) for e in detector.push(pcm[i : i + chunk])]


def _seconds(pcm: bytes) -> float:
    return len(pcm) / 2 / RATE


@pytest.mark.parametrize("kind", CLASSIFIERS)
def test_a_spoken_sentence_is_one_turn_despite_its_comma_pause(kind: str, sentence: bytes) -> None:
    detector = TurnDetector(CLASSIFIERS[kind](), end_silence_ms=500)
    events = _feed(detector, silence(0.5) + sentence + silence(1.0))
    assert [type(e) for e in events] == [SpeechStarted, SpeechPaused, TurnEnded]
    paused, turn = events[1:]
    assert isinstance(turn, TurnEnded) and isinstance(paused, SpeechPaused)
    # The guess made at the pause is the very audio the turn ends with.
    assert paused.audio == turn.audio
    assert turn.silence_seconds == pytest.approx(0.5)
    # The turn holds the sentence (pre-roll in, most trailing silence out).
    assert _seconds(sentence) - 0.4 < _seconds(turn.audio) < _seconds(sentence) + 0.3
    assert not detector.speaking


def test_two_sentences_a_second_apart_are_two_turns(sentence: bytes) -> None:
    detector = TurnDetector(WebRtcClassifier())
    events = _feed(detector, sentence + silence(1.0) + sentence + silence(0.6))
    assert [type(e) for e in events] == [SpeechStarted, SpeechPaused, TurnEnded] * 2


def test_a_pause_shorter_than_the_end_of_turn_keeps_the_turn_going(sentence: bytes) -> None:
    detector = TurnDetector(WebRtcClassifier(), pause_ms=200, end_silence_ms=600)
    events = _feed(detector, sentence + silence(0.4) + sentence + silence(0.8))
    kinds = [type(e) for e in events]
    assert kinds == [SpeechStarted, SpeechPaused, SpeechPaused, TurnEnded]
    first_guess, last_guess, turn = events[1:]
    assert isinstance(turn, TurnEnded) and isinstance(first_guess, SpeechPaused)
    assert isinstance(last_guess, SpeechPaused) and last_guess.audio == turn.audio
    assert _seconds(turn.audio) > 2 * _seconds(sentence) - 0.5


@pytest.mark.parametrize("kind", CLASSIFIERS)
def test_quiet_line_noise_and_a_click_are_not_speech(kind: str) -> None:
    click = noise(0.06, 8000)
    pcm = noise(2.0, 30) + click + noise(1.0, 30)
    assert _feed(TurnDetector(CLASSIFIERS[kind]()), pcm) == []


def test_speech_on_a_noisy_line_is_still_found(sentence: bytes) -> None:
    # White noise at about -40 dBFS under everything: WebRTC plus the loudness gate copes.
    pcm = mixed(silence(1.0) + sentence + silence(1.0) + sentence + silence(1.0), 300)
    events = _feed(TurnDetector(WebRtcClassifier()), pcm)
    assert [type(e) for e in events if not isinstance(e, SpeechPaused)] == [
        SpeechStarted,
        TurnEnded,
    ] * 2


def test_a_caller_who_never_pauses_is_cut_at_the_longest_turn(sentence: bytes) -> None:
    detector = TurnDetector(WebRtcClassifier(), max_turn_seconds=1.0)
    events = _feed(detector, sentence)
    ended = [e for e in events if isinstance(e, TurnEnded)]
    assert ended and _seconds(ended[0].audio) == pytest.approx(1.0, abs=0.05)
