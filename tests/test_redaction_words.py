"""A redacted caller line's values toned word by word in the recording, from a second
recognition with word times after the call (docs/privacy.md#redaction), and the whole line
toned whenever that recognition cannot place them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from callplane.engine.recording_redaction import CALLER, covered_stretches
from callplane.privacy.redaction import Redactor
from callplane.privacy.spoken import normalise
from callplane.privacy.tone import channel_pcm, tone_wav
from callplane.privacy.word_spans import WORD_MARGIN, value_spans
from callplane.settings import Settings
from callplane.telephony.base import Recording
from tests.audio import ESPEAK_RATE, np, silence, speech, transcriber, wav_bytes

RATE = 8000
CARDS = frozenset({"credit_card"})
#: 4539 1488 0343 6467 (Luhn-valid), said digit by digit as a caller reads a card out.
SAID = (
    "My card is four five three nine, one four eight eight, zero three four three, "
    "six four six seven. Thanks."
)
#: Where the line begins in the recording.
AT = 1.0


def digit_groups(text: str) -> list[str]:
    """Every run of three or more digits in ``text``, numbers said as words included."""
    return re.findall(r"\d(?:[\s,.-]*\d){2,}", normalise(text).text)


def telephone(samples: Any) -> Any:
    """espeak-ng's 22 kHz speech at the recording's 8 kHz."""
    from callplane.speech.transcriber import resample

    floats = resample(np.asarray(samples, dtype=np.float32) / 32768, ESPEAK_RATE, RATE)
    return (np.clip(floats, -1, 1) * 32767).astype(np.int16)


def call_recording(caller_line: Any) -> tuple[Recording, float]:
    """A two-channel recording (agent silent) with ``caller_line`` at ``AT``; the line's end."""
    far_end = np.concatenate([silence(AT, RATE), caller_line, silence(1.0, RATE)])
    both = np.stack([np.zeros_like(far_end), far_end], axis=1)
    return Recording("audio/wav", wav_bytes(both, RATE), far_end.size / RATE), AT + (
        caller_line.size / RATE
    )


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def heard(data: bytes, start: float, end: float) -> str:
    pcm, rate = channel_pcm(data, CALLER, start, end)
    return " ".join(s.text for s in transcriber().transcribe(pcm, rate, language="en"))


def test_values_are_placed_from_their_words() -> None:
    redactor = Redactor(CARDS, recordings=True)
    words = [("My", 0.0, 0.3), ("card", 0.3, 0.6), ("is", 0.6, 0.9)]
    words += [(d, 1.0 + i * 0.3, 1.2 + i * 0.3) for i, d in enumerate("4539148803436467")]
    words += [("thanks.", 6.3, 6.8)]
    # From the end of the word before the card to the start of the word after, widened.
    [(start, end)] = value_spans(redactor, words, 7.0) or [(0.0, 0.0)]
    assert (start, end) == pytest.approx((0.9 - WORD_MARGIN, 6.3 + WORD_MARGIN))
    # Said as words; the value ends the line: it is covered to the end of the audio.
    digits = "four five three nine one four eight eight zero three four three six four six seven"
    spoken = [("card", 0.0, 0.4)] + [
        (w, 0.5 + i / 4, 0.7 + i / 4) for i, w in enumerate(digits.split(" "))
    ]
    assert value_spans(redactor, spoken, 6.0) == [pytest.approx((0.4 - WORD_MARGIN, 6.0))]


@pytest.mark.parametrize(
    "words",
    [
        pytest.param([], id="no-words"),
        # A digit misheard: the Luhn check fails, as the live line may have passed it.
        pytest.param(
            [("card", 0, 1), ("4539", 1, 2), ("1488", 2, 3), ("0343647", 3, 4)], id="misheard"
        ),
        # One card placed, but another run of digits left that could be a second one.
        pytest.param(
            [("4539148803436467", 0, 1), ("and", 1, 2), ("4111", 2, 3), ("11", 3, 4)],
            id="digits-left",
        ),
    ],
)
def test_words_that_cannot_place_every_value_give_none(words: list[Any]) -> None:
    assert value_spans(Redactor(CARDS, recordings=True), words, 5.0) is None


async def test_only_the_card_is_toned_in_a_real_recording() -> None:
    line = telephone(speech(SAID))
    recording, ends = call_recording(line)
    redactor = Redactor(CARDS, recordings=True)
    redactor.said.append(("user", AT, ends))
    stretches = await covered_stretches(redactor, recording, [], settings(), "en")
    [(channel, start, end)] = stretches
    # The card's words, not the line: "My card is" begins it.
    assert channel == CALLER and start > AT + 0.3 and end <= ends + 0.5

    toned = tone_wav(recording.data, stretches)
    after = heard(toned, 0, recording.duration_seconds)
    # "My card is" (or what is left of it beside the tone) is still there; no digit is.
    assert re.search(r"\b(my|card)\b", after.lower()), after
    assert digit_groups(after) == [], after
    # What was toned held the card: heard on its own, before toning, it has the digits.
    assert digit_groups(heard(recording.data, start, end)), (start, end)


async def test_a_line_without_values_heard_again_is_toned_whole() -> None:
    # The live recogniser heard a value; this recording holds none to place (or no speech).
    recording, ends = call_recording(telephone(speech("Could you send me the invoice, please?")))
    redactor = Redactor(CARDS, recordings=True)
    redactor.said += [("user", AT, ends), ("user", 0.0, 0.5)]
    stretches = await covered_stretches(redactor, recording, [], settings(), "en")
    assert stretches == [(CALLER, 0.0, ends + 0.5), (CALLER, 0.0, 1.0)]


async def test_a_line_that_cannot_be_heard_again_is_toned_whole(tmp_path: Path) -> None:
    recording, ends = call_recording(telephone(speech(SAID)))
    redactor = Redactor(CARDS, recordings=True)
    redactor.said += [("user", AT, ends), ("assistant", 2.0, None)]
    broken = settings(whisper_model_dir=str(tmp_path))
    stretches = await covered_stretches(redactor, recording, [], broken, "en")
    # The agent's line is covered to the end (its voice gives no word times).
    duration = recording.duration_seconds
    assert stretches == [(CALLER, 0.0, ends + 0.5), (0, 1.0, duration)]
