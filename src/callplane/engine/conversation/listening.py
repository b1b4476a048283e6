"""The agent's ears: the far end's media in, caller events out.

Audio (SIP): every frame goes through voice-activity detection (``speech.vad``). The caller
starting to speak is reported at once (``CallerSpeaking``: the turn loop's barge-in), and so is
their voice outlasting a backchannel (``CallerKeptSpeaking``); a shorter stretch of voice is
reported with its words at the pause after it (``CallerPaused``: "uh-huh" does not cut the
agent's line, "wait" does; ``backchannel.py``). The end of their turn is recognised off the
event loop and reported as ``CallerSaid``. Recognition starts at the first pause
(``SpeechPaused``), while the end of the turn is still being waited for: when the turn does end
there, its text is ready sooner; when the caller goes on, the guess is dropped. That guess's
text also decides how long the silence must last (``endpointing``: a finished sentence ends the
turn sooner than a trailing "my number is"). With ``tell_guesses``, the guess is also told as
soon as it is read (``LikelyTurnEnd``), while the turn may still go on, and its withdrawal when
the caller does (``TurnResumed``): the turn loop asks the brain on it (a speculative reply,
``speculation.py``). A line that stops sending audio is heard as silence, so a turn still ends
when the far end goes quiet by sending nothing. Text (the simulated network): each
``TextFrame`` is a whole caller turn.

Times are ``time.monotonic()`` seconds, so the turn loop can measure its response latency from
the moment the caller stopped speaking.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

from callplane.engine.conversation.backchannel import BACKCHANNEL_MS
from callplane.engine.conversation.endpointing import Endpointing, classify
from callplane.observability.metrics import observe_recognition
from callplane.speech import executors
from callplane.speech.base import Transcriber
from callplane.speech.turn_model import TurnModelMissing, shared_model
from callplane.speech.vad import SpeechPaused, SpeechStarted, TurnDetector, TurnEnded
from callplane.telephony.base import SAMPLE_RATE, SAMPLE_WIDTH, AudioFrame, Connection, TextFrame

log = logging.getLogger("callplane.engine.conversation.listening")

#: Without audio for this long, the line is taken to be silent (for end of turn).
GAP_SECONDS = 0.1
#: After the far end hangs up, how long its last turn's recognition may still take.
LAST_TURN_SECONDS = 1.0


@dataclass(frozen=True)
class CallerSpeaking:
    """The caller's voice began: a turn, or more of one after a pause."""

    at: float


@dataclass(frozen=True)
class CallerKeptSpeaking:
    """This stretch of the caller's voice has lasted longer than a backchannel: they are
    taking the turn (``backchannel.BACKCHANNEL_MS``)."""

    at: float


@dataclass(frozen=True)
class CallerPaused:
    """A stretch of voice no longer than a backchannel was followed by a pause, and this is
    what it said (empty: no words, a noise). The turn may still go on."""

    text: str
    #: When the caller's turn began (the ``started_at`` of its ``CallerSaid``) and paused.
    started_at: float
    at: float


@dataclass(frozen=True)
class CallerSaid:
    text: str
    #: When the caller began and stopped speaking.
    started_at: float
    ended_at: float
    #: When the listener declared the turn over (issue 29: the end-of-turn phase of latency).
    declared_at: float | None = None


@dataclass(frozen=True)
class CallerGone:
    """The far end hung up: the frames ran out."""


@dataclass(frozen=True)
class LikelyTurnEnd:
    """The caller paused and the pause's words are read: the turn may be over with them, or
    go on (a ``TurnResumed`` then, or a ``CallerSaid`` with other words)."""

    text: str
    #: When the caller began speaking (``CallerSaid.started_at`` of the same turn).
    started_at: float


@dataclass(frozen=True)
class TurnResumed:
    """The caller spoke again after a ``LikelyTurnEnd``: its words are not the turn's."""


CallerEvent = (
    CallerSpeaking
    | CallerKeptSpeaking
    | CallerPaused
    | CallerSaid
    | CallerGone
    | LikelyTurnEnd
    | TurnResumed
)


class Listener:
    def __init__(
        self,
        connection: Connection,
        *,
        transcriber: Transcriber | None,
        hints: Sequence[str] = (),
        detector: Callable[[], TurnDetector] | None = None,
        endpointing: Endpointing | None = None,
        tell_guesses: bool = False,
    ) -> None:
        self._connection = connection
        self._tell_guesses = tell_guesses
        #: The pause's guess that may still be told (None once the turn ended or went on).
        self._telling: asyncio.Task[str] | None = None
        self._told = False
        self._transcriber = transcriber
        self._hints = tuple(hints)
        # A detector given without a policy keeps its own fixed end of turn (tests script it).
        if endpointing is None and detector is None:
            endpointing = Endpointing()
        self._endpointing = endpointing
        self._detector = detector or self._policy_detector
        #: Given every stretch of the far end's audio as it is heard (silence included), for
        #: whoever needs the sound itself (the end of a voicemail greeting).
        self.on_audio: Callable[[bytes], None] | None = None

    def _policy_detector(self) -> TurnDetector:
        assert self._endpointing is not None
        policy = self._endpointing
        return TurnDetector(pause_ms=policy.pause_ms, end_silence_ms=policy.longest_ms)

    async def events(self) -> AsyncIterator[CallerEvent]:
        if self._connection.media == "text":
            async for frame in self._connection.frames():
                if isinstance(frame, TextFrame) and frame.text.strip():
                    now = time.monotonic()
                    yield CallerSpeaking(now)
                    # The transcript places the line when it was said, if it was read later.
                    yield CallerSaid(frame.text.strip(), min(frame.said_at or now, now), now)
        else:
            async for event in self._audio_events():
                yield event
        yield CallerGone()

    async def _audio_events(self) -> AsyncIterator[CallerEvent]:
        # Frames are heard in one task and turns recognised in others, so recognition (seconds
        # on a busy machine) never delays noticing the caller speak again, or hang up.
        out: asyncio.Queue[CallerEvent | None] = asyncio.Queue()
        hearing = asyncio.create_task(self._hear(out))
        try:
            while (event := await out.get()) is not None:
                yield event
        finally:
            hearing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await hearing

    async def _hear(self, out: asyncio.Queue[CallerEvent | None]) -> None:
        # A separate task drains the frames: waiting on a queue with a timeout is safe, waiting
        # on the adapter's iterator with one would cancel (and so end) that iterator.
        inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        pump = asyncio.create_task(self._pump(inbox))
        detector = self._detector()
        speech_started = time.monotonic()
        guess: asyncio.Task[str] | None = None
        #: Set when the guess's text will never be used.
        abandon = threading.Event()
        guessed_audio = b""
        #: The pause's guess (and the model's verdict) that still has to set how long this turn
        #: waits.
        deciding: asyncio.Task[tuple[str, float | None]] | None = None
        delivered: asyncio.Task[None] | None = None
        #: Whether this stretch of voice has been reported longer than a backchannel.
        kept_speaking = False
        reporting: set[asyncio.Task[None]] = set()
        try:
            while True:
                try:
                    # Not wait_for: on Python 3.11 it loses a cancellation that arrives as the
                    # get completes (frames come every 20 ms), and the call never ends.
                    async with asyncio.timeout(GAP_SECONDS):
                        pcm = await inbox.get()
                except TimeoutError:
                    pcm = bytes(int(GAP_SECONDS * SAMPLE_RATE) * SAMPLE_WIDTH)
                if pcm is None:
                    break
                if self.on_audio is not None:
                    self.on_audio(pcm)
                if deciding is not None and deciding.done():
                    self._decide(detector, deciding)
                    deciding = None
                for event in detector.push(pcm):
                    if isinstance(event, SpeechStarted):
                        speech_started = time.monotonic()
                        kept_speaking = False
                        out.put_nowait(CallerSpeaking(speech_started))
                    elif isinstance(event, SpeechPaused):
                        abandon = threading.Event()
                        guess = asyncio.create_task(self._recognise(event.audio, abandon))
                        guessed_audio = event.audio
                        if not kept_speaking:
                            paused = CallerPaused("", speech_started, time.monotonic())
                            task = asyncio.create_task(_report_pause(guess, paused, out))
                            reporting.add(task)
                            task.add_done_callback(reporting.discard)
                        if self._tell_guesses:
                            self._telling, self._told = guess, False
                            guess.add_done_callback(
                                functools.partial(self._tell, out, detector, speech_started)
                            )
                        if self._endpointing is not None:
                            # Until this pause's text is known, the longest wait holds.
                            detector.end_after(self._endpointing.longest_ms)
                            deciding = asyncio.create_task(self._judge(guess, event.audio, abandon))
                    elif isinstance(event, TurnEnded):
                        # Its ``CallerSaid`` follows: a guess read only now is not worth telling.
                        self._telling, self._told = None, False
                        if self._endpointing is not None:
                            detector.end_after(self._endpointing.longest_ms)
                            deciding = None
                        # The last pause's guess is the turn's text only if it heard this very
                        # audio: the caller may have spoken again after it, and a turn cut at
                        # its longest may end mid-word after an earlier pause.
                        if guess is None or guessed_audio != event.audio:
                            abandon.set()
                            guess = asyncio.create_task(self._recognise(event.audio))
                        ended = time.monotonic() - event.silence_seconds
                        turn = CallerSaid("", speech_started, ended, time.monotonic())
                        delivered = asyncio.create_task(_deliver(delivered, guess, turn, out))
                        guess, guessed_audio = None, b""
                if guess is not None and detector.silent_ms == 0:
                    # The caller spoke again: the guess's audio is no longer the turn's, so its
                    # text will never be used. Dropped, it never runs if it is still queued for
                    # a recognition thread (on a busy worker, most such guesses are); one
                    # already running stops before decoding if it can.
                    abandon.set()
                    guess.cancel()
                    guess, guessed_audio = None, b""
                    self._telling = None
                    if self._told:
                        self._told = False
                        out.put_nowait(TurnResumed())
                    kept_speaking = False
                    out.put_nowait(CallerSpeaking(time.monotonic()))
                if not kept_speaking and detector.voiced_ms > BACKCHANNEL_MS:
                    kept_speaking = True
                    out.put_nowait(CallerKeptSpeaking(time.monotonic()))
            if delivered is not None:
                # The caller hung up: their last words still count, if recognised promptly.
                await asyncio.wait({delivered}, timeout=LAST_TURN_SECONDS)
        finally:
            for task in (*reporting, pump):
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
            out.put_nowait(None)

    def _tell(
        self,
        out: asyncio.Queue[CallerEvent | None],
        detector: TurnDetector,
        started_at: float,
        guess: asyncio.Task[str],
    ) -> None:
        """The pause's guess is read: told at once if the caller is still silent and the turn
        not yet over (a done callback: the next frame is up to 20 ms away)."""
        if guess is not self._telling or guess.cancelled():
            return
        self._telling = None
        text = guess.result()
        if text and detector.silent_ms > 0:
            self._told = True
            out.put_nowait(LikelyTurnEnd(text, started_at))

    def _decide(
        self, detector: TurnDetector, judged: asyncio.Task[tuple[str, float | None]]
    ) -> None:
        """The pause's text (and voice) set the turn's wait, if the caller has stayed silent
        since: had they spoken again, a later pause brings its own guess."""
        assert self._endpointing is not None
        if detector.silent_ms >= self._endpointing.pause_ms and not judged.cancelled():
            detector.end_after(self._endpointing.wait_ms(*judged.result()))

    async def _judge(
        self, guess: asyncio.Task[str], pcm: bytes, abandoned: threading.Event
    ) -> tuple[str, float | None]:
        """The pause's text and, in ``model`` mode, how finished the voice sounds: the model
        hears the audio while the recogniser reads it, so the verdict costs no extra wait. A
        scoring still queued when it can no longer matter (the caller spoke again, or the text
        alone already says the turn goes on) is skipped: on a busy worker most of them are."""
        assert self._endpointing is not None
        if self._endpointing.mode != "model":
            return await guess, None
        moot = threading.Event()
        audio, rate = self._connection.recognition_audio(pcm)
        scoring = asyncio.create_task(_score_turn(audio, rate, abandoned, moot))
        try:
            text = await guess
        except asyncio.CancelledError:
            moot.set()
            raise
        if classify(text) == "incomplete":
            moot.set()
        return text, await scoring

    async def _pump(self, inbox: asyncio.Queue[bytes | None]) -> None:
        try:
            async for frame in self._connection.frames():
                if isinstance(frame, AudioFrame):
                    inbox.put_nowait(frame.pcm)
        finally:
            inbox.put_nowait(None)

    async def _recognise(self, pcm: bytes, abandoned: threading.Event | None = None) -> str:
        if self._transcriber is None:
            return ""
        audio, rate = self._connection.recognition_audio(pcm)
        started = time.monotonic()
        try:
            segments = await executors.run(
                "recognition",
                self._transcriber.transcribe,
                audio,
                rate,
                hints=self._hints,
                abandoned=abandoned,
            )
            observe_recognition(len(pcm), time.monotonic() - started)
        except Exception:
            # One unrecognisable turn must not end the call: the caller can say it again.
            log.exception("speech recognition failed on a caller turn")
            return ""
        return " ".join(s.text.strip() for s in segments if s.text.strip())


async def _score_turn(pcm: bytes, rate: int, *skip_if: threading.Event) -> float | None:
    """The end-of-turn model's probability that the turn is complete, or None when the model
    cannot say (not installed, or it failed) or was not asked (one of ``skip_if`` was set before
    its turn on the executor came): the text alone decides then."""
    try:
        return await executors.run("turn", _probability, pcm, rate, skip_if)
    except TurnModelMissing as exc:
        _warn_once(str(exc))
    except Exception:
        log.exception("the end-of-turn model failed on a pause")
    return None


def _probability(pcm: bytes, rate: int, skip_if: tuple[threading.Event, ...]) -> float | None:
    if any(event.is_set() for event in skip_if):
        return None
    return shared_model().probability(pcm, rate)


@functools.cache
def _warn_once(why: str) -> None:
    log.warning("CALLPLANE_ENDPOINTING=model decides as smart: %s", why)


async def _report_pause(
    guess: asyncio.Task[str], paused: CallerPaused, out: asyncio.Queue[CallerEvent | None]
) -> None:
    """Report a short stretch of voice with its words, once recognised (not if the caller
    spoke again first: the guess is dropped then)."""
    await asyncio.wait({guess})
    if not guess.cancelled():
        out.put_nowait(CallerPaused(guess.result(), paused.started_at, paused.at))


async def _deliver(
    previous: asyncio.Task[None] | None,
    recognition: asyncio.Task[str],
    turn: CallerSaid,
    out: asyncio.Queue[CallerEvent | None],
) -> None:
    """Report a recognised turn, after the turns before it (recognitions may finish out of
    order)."""
    if previous is not None:
        await previous
    text = await recognition
    if text:
        out.put_nowait(CallerSaid(text, turn.started_at, turn.ended_at, turn.declared_at))
