"""Where a call's redacted values are in its recording (``privacy/tone.py`` covers them).

The transcript's redaction notes each redacted line's role and times on the call's clock
(``Redactor.said``). On a network whose recording keeps its own clock (the simulated one) the
times are moved onto it first. A line's stretch is a caller's from when they began to speak
until they stopped, an agent's (it may read a value back) until its next line, or the end;
widened on both sides, since a line's times on the call's clock and its place in the recording
differ by the jitter of the network and of voice-activity detection (which reports speech a
little after it began, later still on a busy worker).

The recogniser on a live call keeps no word times (they would cost every turn), so once the
call is over each redacted caller line's stretch of the caller's channel is recognised again
with them, and only its values' words are covered (``privacy/word_spans.py``); the whole
stretch is covered when that recognition places no value, or fails. The agent's lines are
covered whole: its voices say when a line was spoken, not when each word was.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from callplane.privacy.redaction import Redactor
from callplane.privacy.tone import channel_pcm
from callplane.privacy.word_spans import value_spans
from callplane.settings import Settings
from callplane.speech import executors
from callplane.speech.models import primary
from callplane.speech.transcriber import SpeechUnavailable, shared_transcriber
from callplane.telephony.base import Recording

log = logging.getLogger("callplane.engine.recording_redaction")

#: Channels of the call's recording (``telephony/recording.py``).
AGENT, CALLER = 0, 1
#: Seconds added before and after each line's stretch.
MARGIN_BEFORE = 1.0
MARGIN_AFTER = 0.5

Stretch = tuple[int, float, float]


def redacted_stretches(
    redactor: Redactor, recording: Recording, transcript: Sequence[dict[str, Any]]
) -> list[Stretch]:
    """(channel, start, end) in the recording's seconds, one per redacted line, widened."""
    duration = recording.duration_seconds
    moments: list[tuple[float, str | None]] = []
    for role, start, end in redactor.said:
        moments.append((start, role))
        if role == "user":
            moments.append((end if end is not None else duration, "caller_ended"))
    places = iter(recording.timeline(moments) if recording.timeline else [m for m, _ in moments])
    # The transcript is on the recording's clock by now (``recorded_clock``).
    agent_lines = sorted(
        float(entry["timestamp"])
        for entry in transcript
        if entry.get("role") == "assistant"
        and entry.get("text")
        and isinstance(entry.get("timestamp"), int | float)
    )
    stretches = []
    for role, _start, end in redactor.said:
        begins = next(places)
        if role == "user":
            ends = next(places) if end is not None else duration
            channel, ends = CALLER, max(begins, ends)
        else:
            later = [at for at in agent_lines if at > begins + 0.01]
            channel, ends = AGENT, later[0] if later else duration
        stretches.append(
            (channel, max(0.0, begins - MARGIN_BEFORE), min(duration, ends + MARGIN_AFTER))
        )
    return stretches


async def covered_stretches(
    redactor: Redactor,
    recording: Recording,
    transcript: Sequence[dict[str, Any]],
    settings: Settings,
    language: str | None,
) -> list[Stretch]:
    """What to cover: each redacted caller line's values where a second recognition places
    them, else (and for the agent's lines) the line's whole stretch."""
    covered: list[Stretch] = []
    for stretch in redacted_stretches(redactor, recording, transcript):
        channel, start, end = stretch
        spans = None
        if channel == CALLER and end > start:
            try:
                spans = await executors.run(
                    "recognition", _values_in, redactor, recording.data, stretch, settings, language
                )
            except SpeechUnavailable as exc:
                # A worker without the speech extra or the model: every line is covered whole.
                log.info("redacted lines are toned whole: %s", exc)
            except Exception:
                # Covered whole: never stored with a value audible.
                log.warning("a redacted line could not be heard again", exc_info=True)
        if spans is None:
            covered.append(stretch)
        else:
            covered.extend((channel, start + a, start + b) for a, b in spans)
    return covered


def _values_in(
    redactor: Redactor, data: bytes, stretch: Stretch, settings: Settings, language: str | None
) -> list[tuple[float, float]] | None:
    """The values' (start, end) within ``stretch``, from its audio recognised with word times;
    None when they cannot be placed. Blocking: run on the recognition threads."""
    channel, start, end = stretch
    pcm, rate = channel_pcm(data, channel, start, end)
    transcriber = shared_transcriber(settings, "redaction", language)
    segments = transcriber.transcribe(pcm, rate, language=primary(language))
    words = [(w.text, w.start, w.end) for s in segments for w in s.words]
    return value_spans(redactor, words, end - start)
