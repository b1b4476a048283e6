"""Which stretch of a recognised line holds its redacted values, from the recogniser's words.

The words are joined into a line, the same detectors read it as they read the transcript
(spoken numbers included: ``spoken.py`` maps each value back to the words it came from), and
each value's words give its seconds. When the words cannot place every value, the answer is
None and the caller covers the whole line: a recording is never stored with a value audible
because a second recognition heard less than the first.
"""

from __future__ import annotations

from collections.abc import Sequence

from callplane.privacy.redaction import Redactor, find, redact

#: Seconds added on each side of a value's stretch: a recogniser's word times are estimates.
WORD_MARGIN = 0.2

#: A word as the recogniser gives it: its text, and its start and end in seconds.
TimedWord = tuple[str, float, float]


def value_spans(
    redactor: Redactor, words: Sequence[TimedWord], duration: float
) -> list[tuple[float, float]] | None:
    """(start, end) in the words' seconds (of audio ``duration`` long) of each value found,
    widened by ``WORD_MARGIN``;
    None when no words came back, no value is found in them (the line was covered, so the
    first recognition heard one, or heard digits enough to be one: this one misheard), or
    digits enough to be a value are left outside the values found (a second value misheard)."""
    words = [w for w in words if w[0].strip()]
    if not words:
        return None
    bounds: list[tuple[int, int]] = []
    position = 0
    for text, _start, _end in words:
        bounds.append((position, position + len(text)))
        position += len(text) + 1
    line = " ".join(text for text, _start, _end in words)
    found = find(line, redactor.entities, redactor.region)
    if not found or redactor.numbers_in(redact(line, found)):
        return None
    spans: list[tuple[float, float]] = []
    for value in found:
        covered = [
            index
            for index, (first, last) in enumerate(bounds)
            if first < value.end and last > value.start
        ]
        if not covered:
            return None
        first, last = covered[0], covered[-1]
        # From the word before to the word after (the audio's edge when there is none): a
        # recogniser places the edges of spoken digits loosely, and may give the pause before
        # the first digit to the word before.
        start = min(words[first - 1][2], words[first][1]) - WORD_MARGIN if first else 0.0
        end = (
            max(words[last + 1][1], words[last][2]) + WORD_MARGIN
            if last + 1 < len(words)
            else duration
        )
        spans.append((max(0.0, start), min(duration, end)))
    return spans
