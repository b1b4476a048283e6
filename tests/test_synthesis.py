"""espeak-ng synthesis and the resampler: real speech out of the Debian program, at any rate."""

from __future__ import annotations

import math
import struct
from array import array

import pytest

from callplane.speech.resampling import resample
from callplane.speech.synthesis import EspeakSynthesizer, SynthesisError
from tests.sipp_peer import rms, tone_power


def _samples(pcm: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(pcm) // 2}h", pcm))


def test_speaks_a_sentence_at_the_telephone_rate() -> None:
    pcm = EspeakSynthesizer().synthesize("Hello, this is your appointment reminder.", 8000)

    samples = _samples(pcm)
    seconds = len(samples) / 8000
    assert 1.5 < seconds < 5.0
    assert rms(samples) > 1000  # speech, not silence


def test_text_cannot_become_an_option_and_control_characters_are_dropped() -> None:
    pcm = EspeakSynthesizer().synthesize("--version \x00\x1b[31m hello", 8000)
    assert len(pcm) > 8000  # spoken audio, not a version banner (which is not a WAV)


def test_empty_and_oversized_text() -> None:
    synthesizer = EspeakSynthesizer()
    assert synthesizer.synthesize("  \n ", 8000) == b""
    with pytest.raises(ValueError):
        synthesizer.synthesize("word " * 2000, 8000)


def test_bad_voice_and_missing_program_are_clear_errors() -> None:
    with pytest.raises(ValueError):
        EspeakSynthesizer(voice="en; rm -rf /")
    with pytest.raises(SynthesisError):
        EspeakSynthesizer(executable="espeak-ng-not-installed").synthesize("hi", 8000)


def test_resampling_keeps_the_band_and_removes_what_would_alias() -> None:
    rate = 22050
    kept = [int(8000 * math.sin(2 * math.pi * 1000 * i / rate)) for i in range(rate)]
    folded = [int(8000 * math.sin(2 * math.pi * 6000 * i / rate)) for i in range(rate)]

    low = list(resample(array("h", kept), rate, 8000))
    high = list(resample(array("h", folded), rate, 8000))

    assert abs(len(low) - 8000) <= 1
    assert 5000 < rms(low[100:-100]) < 6500  # 1 kHz passes at about its level (8000/sqrt 2)
    # 6 kHz would fold to 2 kHz at 8 kHz; the filter leaves next to nothing of it.
    assert rms(high[100:-100]) < 150
    assert tone_power(high[100:-100], 2000) < tone_power(low[100:-100], 1000) / 1000


def test_the_vectorised_resampler_is_the_same_filter_as_the_pure_python_one() -> None:
    from callplane.speech.resampling import _kernel, _resample_numpy, _resample_python

    pytest.importorskip("numpy")
    rate = 22050
    speech = array("h", EspeakSynthesizer().synthesize("Friday at nine is free.", rate))
    kernel = _kernel(0.45 * 8000 / rate)

    fast = _resample_numpy(speech, rate, 8000, kernel)
    slow = _resample_python(speech, rate, 8000, kernel)

    assert len(fast) == len(slow) > 8000
    # Only the order of the float additions differs: at most one step of rounding apart.
    assert max(abs(a - b) for a, b in zip(fast, slow, strict=True)) <= 1
