"""Redaction of spoken card and account numbers (SPEC rule 3, docs/api-contract.md#external-calls).

A run of consecutive spoken digits with 6 or more digits in all ("4 1 1 1 1 1 1 1", "four one
one one…", "4111 1111") is replaced by ``[redacted]`` in the transcript and by a steady tone in
the audio, over the run's word times widened by a margin (word times are estimates). Digits
written in a segment's text that the word times did not cover are redacted in the text as well.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from callplane.speech.base import Segment, Word

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MIN_DIGITS = 6
PLACEHOLDER = "[redacted]"
TONE_HZ = 1000.0
#: -12 dBFS: clearly a tone, not loud enough to hurt.
TONE_LEVEL = 0.25
#: Seconds added before and after each run: word times from the recogniser are approximate.
MARGIN = 0.25

_NUMBER_WORDS = {
    "zero": 1,
    "oh": 1,
    "o": 1,
    "one": 1,
    "two": 1,
    "three": 1,
    "four": 1,
    "five": 1,
    "six": 1,
    "seven": 1,
    "eight": 1,
    "nine": 1,
}
_PUNCTUATION = ".,;:!?\"'()-"
_DIGITS_TOKEN = re.compile(r"^[0-9][0-9\-./]*$")
_DIGITS_IN_TEXT = re.compile(r"[0-9](?:[0-9]|[\s,.\-/](?=[0-9]))*")


def _digits(word: str) -> int:
    """How many digits a spoken word stands for (0 when it is not a number)."""
    token = word.strip(_PUNCTUATION).lower()
    if not token:
        return 0
    if _DIGITS_TOKEN.fullmatch(token):
        return sum(c.isdigit() for c in token)
    return _NUMBER_WORDS.get(token, 0)


def number_runs(words: Sequence[Word]) -> list[tuple[int, int]]:
    """Index ranges [first, last] of runs of 6+ spoken digits."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    count = 0
    for index, word in enumerate([*words, Word("", 0, 0, 0)]):
        digits = _digits(word.text)
        if digits:
            if start is None:
                start, count = index, 0
            count += digits
            continue
        if start is not None and count >= MIN_DIGITS:
            runs.append((start, index - 1))
        start = None
    return runs


def _redact_text(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        found = match.group(0)
        return PLACEHOLDER if sum(c.isdigit() for c in found) >= MIN_DIGITS else found

    return _DIGITS_IN_TEXT.sub(replace, text)


@dataclass(frozen=True)
class Redacted:
    segments: list[Segment]
    #: Time ranges (seconds) to cover with the tone.
    spans: list[tuple[float, float]]


def redact_segments(segments: Sequence[Segment]) -> Redacted:
    """Redact the segments of one channel (a run may continue into the next segment).

    The tone covers everything between the last word before a run and the first word after
    it, not only the run's own word times: the recogniser places the boundaries of spoken
    digits loosely (a pause before the first digit may be given to the word before), and a
    digit left audible is the one mistake redaction must not make.
    """
    flat = [(i, w) for i, segment in enumerate(segments) for w in segment.words]
    words = [w for _, w in flat]
    runs = number_runs(words)
    spans: list[tuple[float, float]] = []
    hidden: set[int] = set()
    firsts: set[int] = set()
    for first, last in runs:
        before = words[first - 1].end if first > 0 else 0.0
        owner_end = segments[flat[last][0]].end
        after = words[last + 1].start if last + 1 < len(words) else owner_end
        spans.append((min(before, words[first].start), max(after, words[last].end)))
        hidden.update(range(first, last + 1))
        # One placeholder per run and segment (a run split by a segment boundary gets two).
        firsts.update(
            k for k in range(first, last + 1) if k == first or flat[k][0] != flat[k - 1][0]
        )
    out: list[Segment] = []
    position = 0
    for segment in segments:
        count = len(segment.words)
        indices = range(position, position + count)
        position += count
        if not any(k in hidden for k in indices):
            out.append(replace(segment, text=_redact_text(segment.text)))
            continue
        kept: list[Word] = []
        for k in indices:
            if k not in hidden:
                kept.append(words[k])
            elif k in firsts:
                kept.append(Word(PLACEHOLDER, words[k].start, words[k].end, 1.0))
        text = _redact_text(" ".join(w.text for w in kept))
        out.append(replace(segment, text=text, words=tuple(kept)))
    return Redacted(out, spans)


#: Audio analysis frame for finding speech the recogniser left out (seconds).
_FRAME = 0.02
#: A frame louder than this (dBFS, RMS) is taken for speech.
_SPEECH_DBFS = -40.0


def unaccounted_speech(
    samples: npt.NDArray[np.float32], words: Sequence[Word], sample_rate: int
) -> list[tuple[float, float]]:
    """Stretches of sound that no recognised word covers.

    A recogniser may drop a digit string altogether (small models do, on long repetitive
    ones), which would leave it audible with nothing to redact. On a leg that must be
    redacted, sound that cannot be accounted for by recognised words is covered as well:
    masking a mumble costs little, leaving a card number audible costs a lot.
    """
    import numpy as np

    frame = int(_FRAME * sample_rate)
    count = len(samples) // frame
    if count == 0:
        return []
    frames = samples[: count * frame].reshape(count, frame).astype(np.float64)
    rms = np.sqrt(np.mean(frames * frames, axis=1))
    loud = rms > 10 ** (_SPEECH_DBFS / 20)
    for word in words:
        if word.text == PLACEHOLDER:
            continue
        first = max(int((word.start - 0.1) / _FRAME), 0)
        last = min(int((word.end + 0.1) / _FRAME) + 1, count)
        loud[first:last] = False
    spans: list[tuple[float, float]] = []
    index = 0
    while index < count:
        if not loud[index]:
            index += 1
            continue
        end = index
        # Bridge short quiet gaps, so one utterance is one span.
        while end < count and (loud[end] or loud[end : end + 15].any()):
            end += 1
        if (end - index) * _FRAME >= 0.2:
            spans.append((index * _FRAME, end * _FRAME))
        index = end
    return spans


def apply_tone(
    channels: list[npt.NDArray[np.float32]],
    spans: Sequence[tuple[float, float]],
    sample_rate: int,
) -> None:
    """Overwrite every channel over each span (widened by MARGIN) with the tone, in place."""
    import numpy as np

    if not channels:
        return
    length = len(channels[0])
    for start, end in spans:
        first = max(int((start - MARGIN) * sample_rate), 0)
        last = min(int((end + MARGIN) * sample_rate), length)
        if last <= first:
            continue
        t = np.arange(last - first, dtype=np.float64) / sample_rate
        tone = (TONE_LEVEL * np.sin(2 * np.pi * TONE_HZ * t)).astype(np.float32)
        for channel in channels:
            channel[first:last] = tone
