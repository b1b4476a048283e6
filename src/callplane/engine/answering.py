"""Who answered an outbound call, heard on the line (docs/answering-machines.md).

The verdict is ``speech.answering``'s, on the frames as they arrive; this only holds the line
while it listens. The recogniser hears the first utterance once it pauses, in the background,
so that mailbox words ("Sam's voicemail.") turn a short greeting the audio took for a person
into a voicemail. Its text is waited for only until ``WORDS_DEADLINE_SECONDS`` after the
answer, or ``WORDS_WAIT_SECONDS`` after the audio's verdict if that is later: a person who said
"Hello?" is answered within 3 s whatever the recogniser's load, and one who said more waits at
most half a second longer than the audio alone would have made them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence

from callplane.speech import executors
from callplane.speech.answering import AnsweringDetector
from callplane.speech.base import Transcriber
from callplane.telephony.base import AnsweredBy, AudioFrame, Connection, Frame
from callplane.telephony.replay import Replayed

log = logging.getLogger("callplane.engine.answering")

#: The first utterance goes to the recogniser after this much quiet (the verdict's own pause
#: is 0.7 s, so the text is often ready by then).
GUESS_PAUSE_SECONDS = 0.3
#: The latest, from the answer, that a ``human`` verdict waits for the recogniser's words.
WORDS_DEADLINE_SECONDS = 2.2
#: The longest a ``human`` verdict waits for the words once the audio has decided.
WORDS_WAIT_SECONDS = 0.5


async def detect_answered_by(
    connection: Connection,
    transcriber: Transcriber | None = None,
    hints: Sequence[str] = (),
    *,
    words_deadline_seconds: float = WORDS_DEADLINE_SECONDS,
) -> tuple[AnsweredBy, Connection]:
    """Who answered, and the connection to hold the conversation on.

    An adapter that knows (the simulated network) has said so; a text connection has no audio
    to judge and is a person. Otherwise this listens to the first seconds (at most the
    detector's ``longest_wait_seconds``; a far end that sends no audio at all is a person) and
    returns a connection that replays what was heard, since the conversation must hear it too.
    If the listening task is cancelled the call is hung up first: nobody else holds it yet.
    """
    if connection.answered_by is not None:
        return connection.answered_by, connection
    if connection.media != "audio":
        return "human", connection
    answered = time.monotonic()
    detector = AnsweringDetector()
    heard: list[Frame] = []
    frames = connection.frames()
    guess: asyncio.Task[str] | None = None
    try:
        async with asyncio.timeout(detector.longest_wait_seconds):
            async for frame in frames:
                heard.append(frame)
                if not isinstance(frame, AudioFrame):
                    continue
                if detector.feed(frame.pcm) is not None:
                    break
                if guess is not None and guess.done() and not guess.cancelled():
                    detector.heard(guess.result())
                    if detector.verdict is not None:
                        break
                if guess is not None and detector.pause_seconds < GUESS_PAUSE_SECONDS:
                    guess.cancel()  # they spoke again: the guess heard only part of it
                    guess = None
                if transcriber and guess is None and detector.pause_seconds >= GUESS_PAUSE_SECONDS:
                    guess = asyncio.create_task(
                        _recognise(connection, transcriber, detector.utterance, hints)
                    )
        if detector.reason == "pause" and guess is not None:
            since = time.monotonic() - answered
            left = max(words_deadline_seconds - since, WORDS_WAIT_SECONDS)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, left)):
                    detector.overrule(await asyncio.shield(guess))
    except TimeoutError:
        pass
    except Exception:
        log.exception("listening for who answered failed; taking it for a person")
    except BaseException:
        await asyncio.shield(connection.hangup())
        raise
    finally:
        if guess is not None and not guess.done():
            guess.cancel()
        await frames.aclose()  # type: ignore[attr-defined]
    replayed = Replayed(connection, heard)
    replayed.answered_by = detector.verdict or "human"
    log.info(
        "answered by %s (%s) after %.2f s of audio",
        replayed.answered_by,
        detector.reason or "no audio",
        detector.decided_after_seconds,
    )
    return replayed.answered_by, replayed


async def _recognise(
    connection: Connection, transcriber: Transcriber, pcm: bytes, hints: Sequence[str]
) -> str:
    audio, rate = connection.recognition_audio(pcm)
    try:
        segments = await executors.run(
            "recognition", transcriber.transcribe, audio, rate, hints=hints
        )
    except Exception:
        log.exception("recognising the first words failed")
        return ""
    return " ".join(s.text.strip() for s in segments if s.text.strip())
