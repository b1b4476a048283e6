"""The beep detector on synthetic audio: pure tones in and out of the band, long and short
enough, wherever they start in a frame; noise and speech are never a beep."""

from __future__ import annotations

import math
import struct

import pytest

from callplane.speech.tones import Beep, ToneDetector, tonal_peak
from tests.sipp_peer import tone_pcm
from tests.speech_audio import mixed, noise, silence, spoken


def _beeps(audio: bytes) -> list[Beep]:
    detector = ToneDetector()
    found = [detector.feed(audio[i : i + 320]) for i in range(0, len(audio) - 319, 320)]
    return [beep for beep in found if beep is not None]


@pytest.mark.parametrize("frequency", [300, 440, 1000, 1400, 2500])
def test_a_tone_in_the_band_held_long_enough_is_a_beep(frequency: int) -> None:
    beeps = _beeps(silence(0.5) + tone_pcm(frequency, 0.4) + silence(0.5))
    assert len(beeps) == 1
    beep = beeps[0]
    assert beep.frequency == pytest.approx(frequency, abs=50)
    assert beep.seconds == pytest.approx(0.4, abs=0.02)
    # Reported where it stopped, so a message can start after it.
    assert beep.started_at == pytest.approx(0.5, abs=0.02)
    assert beep.ended_at == pytest.approx(0.9, abs=0.02)


@pytest.mark.parametrize("frequency", [150, 250, 2800, 3500])
def test_a_tone_outside_the_band_is_not_a_beep(frequency: int) -> None:
    assert _beeps(silence(0.2) + tone_pcm(frequency, 0.5) + silence(0.5)) == []


@pytest.mark.parametrize("seconds", [0.04, 0.1, 0.12])
def test_a_tone_shorter_than_150_ms_is_not_a_beep(seconds: float) -> None:
    for offset in (0.0, 0.007, 0.013):  # starting on a frame boundary or inside a frame
        assert _beeps(silence(0.2 + offset) + tone_pcm(1000, seconds) + silence(0.5)) == []


@pytest.mark.parametrize("offset", [0.0, 0.005, 0.01, 0.015])
def test_a_tone_of_150_ms_is_a_beep_wherever_it_starts(offset: float) -> None:
    beeps = _beeps(silence(0.2 + offset) + tone_pcm(1000, 0.15) + silence(0.5))
    assert len(beeps) == 1 and beeps[0].seconds >= 0.14


def test_a_beep_on_a_noisy_line_is_still_heard() -> None:
    assert len(_beeps(mixed(silence(0.3) + tone_pcm(850, 0.3) + silence(0.3), 300))) == 1


def test_a_quiet_tone_is_below_what_a_line_carries() -> None:
    assert _beeps(tone_pcm(1000, 0.5, amplitude=200)) == []


def test_noise_is_never_a_beep() -> None:
    assert _beeps(noise(3.0, 3000)) == []
    _, tonality, _ = tonal_peak(noise(0.02, 3000))
    assert tonality < 0.5


def test_speech_is_never_a_beep() -> None:
    speech = spoken(
        "Hi, you've reached Sam. I can't take your call right now, "
        "please leave a message after the tone. Hello? Hello, who is this?"
    )
    assert _beeps(speech) == []


def test_two_tones_in_a_row_are_one_run_each() -> None:
    # A frequency change ends a run: a 100 ms + 100 ms two-note chime is not one long beep.
    assert _beeps(tone_pcm(700, 0.1) + tone_pcm(1300, 0.1) + silence(0.3)) == []


def test_a_chord_is_not_a_pure_tone() -> None:
    samples = int(8000 * 0.5)
    chord = struct.pack(
        f"<{samples}h",
        *(
            int(6000 * math.sin(2 * math.pi * 440 * i / 8000))
            + int(6000 * math.sin(2 * math.pi * 660 * i / 8000))
            for i in range(samples)
        ),
    )
    assert _beeps(chord) == []


def test_the_detector_says_while_a_tone_sounds_and_once_it_is_a_beep() -> None:
    detector = ToneDetector()
    tone = tone_pcm(1000, 0.3)
    states = []
    for i in range(0, len(tone), 320):
        detector.feed(tone[i : i + 320])
        states.append((detector.in_tone, detector.beeping))
    assert states[0] == (True, False)
    assert states[-1] == (True, True)
    # A beep from 140 ms in (7 frames: the measure allows for a partly filled frame).
    assert sum(1 for _, beeping in states if not beeping) == 6
