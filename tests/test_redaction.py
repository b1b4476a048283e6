"""Which spoken numbers are redacted, and where the tone goes (external_calls.redaction)."""

from __future__ import annotations

import pytest

from callplane.external_calls.redaction import PLACEHOLDER, redact_segments
from callplane.speech.base import Segment, Word


def segment(*words: str, start: float = 0.0, step: float = 0.5) -> Segment:
    timed = tuple(
        Word(w, start + i * step, start + (i + 1) * step - 0.1, 0.9) for i, w in enumerate(words)
    )
    return Segment(" ".join(words), timed[0].start, timed[-1].end, 0.8, timed)


@pytest.mark.parametrize(
    "words",
    [
        ("my", "card", "is", "4", "1", "1", "1", "2", "2", "thanks"),
        ("my", "card", "is", "four", "one", "one", "one", "two", "two", "thanks"),
        ("my", "card", "is", "4111", "2222.", "thanks"),
        ("my", "card", "is", "4-1-1-1-2-2", "thanks"),
        ("my", "card", "is", "4,", "-1,", "-1,", "oh", "2,", "zero", "thanks"),
    ],
    ids=["digits", "number-words", "groups", "hyphenated", "mixed"],
)
def test_six_or_more_spoken_digits_are_redacted(words: tuple[str, ...]) -> None:
    result = redact_segments([segment(*words)])
    (out,) = result.segments
    assert out.text.split() == ["my", "card", "is", PLACEHOLDER, "thanks"]
    # The tone runs from the end of "is" to the start of "thanks", covering the whole gap.
    ((start, end),) = result.spans
    assert start == pytest.approx(1.4) and end == pytest.approx(0.5 * (len(words) - 1))


@pytest.mark.parametrize(
    "words",
    [
        ("call", "me", "at", "five", "past", "two"),
        ("my", "pin", "is", "12345"),
        ("room", "1", "2", "3", "and", "4", "5", "6"),
    ],
    ids=["time", "five-digits", "interrupted"],
)
def test_shorter_numbers_stay(words: tuple[str, ...]) -> None:
    result = redact_segments([segment(*words)])
    assert result.segments[0].text == " ".join(words) and result.spans == []


def test_a_run_split_across_segments_is_one_span() -> None:
    first = segment("the", "number", "is", "4", "1", "1")
    second = segment("1", "2", "2", "okay", start=3.0)
    result = redact_segments([first, second])
    assert [s.text for s in result.segments] == [
        f"the number is {PLACEHOLDER}",
        f"{PLACEHOLDER} okay",
    ]
    ((start, end),) = result.spans
    assert start == pytest.approx(1.4) and end == pytest.approx(4.5)


def test_digits_only_in_the_text_are_redacted_in_the_text() -> None:
    """Without word times (another recogniser), the text is still cleaned."""
    bare = Segment("card 4111 1111 1111 1111 ok", 0.0, 3.0, 0.9)
    result = redact_segments([bare])
    assert result.segments[0].text == f"card {PLACEHOLDER} ok"
