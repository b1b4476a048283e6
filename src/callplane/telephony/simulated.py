"""The simulated phone network (DESIGN §10): every outcome reachable without a phone line.

The far end is chosen by the last four digits of the number dialled:

    0001  busy          0003  failed
    0002  no_answer     0004  answered by voicemail (a greeting, then silence)
    else  answered by a person, who says "Hello?" once and then listens

An answered call ends from the far end after ``call_seconds``. Media is text
(``TextFrame``): the engine's conversation runs unchanged, without speech recognition or
synthesis. The recording holds what was said, as a phone call's does (DESIGN §16): once the
call is over, each line is spoken — the agent's in its voice (``speak_as``) on channel 0, the
person's in espeak-ng on channel 1 — at the moment it was said, or just after the line before
it ends (text arrives faster than speech), so a demo call can be listened to.
``script`` makes the person talk back: after "Hello?", each line the agent plays is
answered with the next line of the script, while lines remain (CALLPLANE_SIMULATED_SCRIPT).

Transfers are accepted, cold or warm, except to numbers ending in ``0005`` (busy); a warm one's
person is a simulated connection too, told the summary (kept in ``briefed``), with no bridge to
hold: the agent's leg then ends as after a cold one.

Inbound calls are simulated with ``ring``: it offers a call to the router given to ``start``, as
a SIP INVITE would, and holds it with the same simulated person.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Sequence

from callplane.speech.base import Synthesizer
from callplane.speech.synthesis import EspeakSynthesizer
from callplane.telephony.base import (
    SAMPLE_RATE,
    SAMPLE_WIDTH,
    AnsweredBy,
    Brief,
    Connection,
    DialFailed,
    DialRequest,
    EndedBy,
    Frame,
    InboundOffer,
    InboundRouter,
    Recording,
    TelephonyAdapter,
    TextFrame,
    TransferOutcome,
    TransferTarget,
)
from callplane.telephony.recording import stereo_wav

log = logging.getLogger("callplane.telephony.simulated")

#: Past this a simulated recording is cut (a long demo call stays small).
MAX_RECORDING_SECONDS = 600
BYTES_PER_SECOND = SAMPLE_RATE * SAMPLE_WIDTH
#: Channels of the recording (``telephony.recording``), and the pause between two lines.
AGENT, PERSON = 0, 1
LINE_GAP_SECONDS = 0.4
GREETING = "Hello?"
#: A warm transfer's simulated person stays on the line at most this long.
TRANSFER_LEG_SECONDS = 60.0
VOICEMAIL_GREETING = "You have reached voicemail. Please leave a message after the tone."


class SimulatedConnection(Connection):
    def __init__(
        self,
        answered_by: AnsweredBy,
        call_seconds: float,
        script: Sequence[str] = (),
        person_voice: Synthesizer | None = None,
        briefed: list[str] | None = None,
    ) -> None:
        super().__init__(media="text", answered_by=answered_by)
        #: What the person answering each warm transfer was told before being put through.
        self.briefed = [] if briefed is None else briefed
        self._incoming: asyncio.Queue[Frame | None] = asyncio.Queue()
        self._ended = asyncio.Event()
        self._script = list(script) if answered_by == "human" else []
        #: Everything the agent played, in order (for tests and logs).
        self.played: list[Frame] = []
        self._answered = time.monotonic()
        self._person_voice = person_voice
        self._agent_voice: Synthesizer | None = None
        #: (seconds into the call, channel, text) of every line either side said.
        self._lines: list[tuple[float, int, str]] = []
        self._say(GREETING if answered_by == "human" else VOICEMAIL_GREETING)
        self._length = 0.0
        self._timer = asyncio.get_running_loop().call_later(call_seconds, self._end, "remote")

    def _end(self, by: EndedBy) -> None:
        if self._ended.is_set():
            return
        self.ended_by = by
        self._length = min(time.monotonic() - self._answered, MAX_RECORDING_SECONDS)
        self._timer.cancel()
        self._ended.set()
        self._incoming.put_nowait(None)

    async def frames(self) -> AsyncIterator[Frame]:
        while not self._ended.is_set() or not self._incoming.empty():
            frame = await self._incoming.get()
            if frame is None:
                return
            yield frame

    async def play(self, frame: Frame) -> None:
        if self._ended.is_set():
            return
        self.played.append(frame)
        if isinstance(frame, TextFrame):
            self._lines.append((time.monotonic() - self._answered, AGENT, frame.text))
        if self._script:
            self._say(self._script.pop(0))

    def _say(self, text: str) -> None:
        self._lines.append((time.monotonic() - self._answered, PERSON, text))
        self._incoming.put_nowait(TextFrame(text))

    def speak_as(self, voice: Synthesizer | None) -> None:
        self._agent_voice = voice

    async def interrupt(self) -> None:
        """Nothing is queued: a text line is played whole at once."""

    async def hangup(self) -> None:
        self._end("local")

    async def wait_ended(self) -> EndedBy:
        await self._ended.wait()
        assert self.ended_by is not None
        return self.ended_by

    # Tools (DESIGN §15): every transfer is accepted but to numbers ending in 0005 (busy), and
    # what the agent pressed is kept, so tools are testable without SIP.
    dtmf_sent: tuple[str, ...] = ()
    transfers: tuple[TransferTarget, ...] = ()

    async def send_dtmf(self, digits: str) -> None:
        self.dtmf_sent = (*self.dtmf_sent, digits)

    async def transfer(self, target: TransferTarget, brief: Brief | None = None) -> TransferOutcome:
        if self._ended.is_set():
            return TransferOutcome(False, "the call has ended")
        if (target.number or "").endswith("0005"):
            return TransferOutcome(False, "busy")
        if target.mode == "warm" and brief is not None:
            # A simulated person answers and is briefed; there is no bridge to hold (text).
            person = SimulatedConnection("human", TRANSFER_LEG_SECONDS)
            try:
                await brief(person)
            finally:
                await person.hangup()
            told = [f.text for f in person.played if isinstance(f, TextFrame)]
            self.briefed.append(" ".join(told))
        self.transfers = (*self.transfers, target)
        # The agent's leg is left to the agent to hang up, once the transfer is recorded (as
        # after a SIP transfer's NOTIFY 200).
        return TransferOutcome(True, leg_call_id=f"simulated-{uuid.uuid4().hex}")

    async def recording(self) -> Recording | None:
        if not self._ended.is_set() or self._length <= 0:
            return None
        agent, person = await asyncio.to_thread(self._render)
        return Recording("audio/wav", stereo_wav(agent, person), len(agent) / BYTES_PER_SECOND)

    def _render(self) -> tuple[bytes, bytes]:
        """Both channels, each line spoken where it was said (blocking: synthesis)."""
        tracks = [bytearray(), bytearray()]
        voices = [self._agent_voice or self._person_voice, self._person_voice]
        limit = MAX_RECORDING_SECONDS * BYTES_PER_SECOND
        cursor = 0
        for at, channel, text in self._lines:
            pcm = _speak(voices[channel], text)
            after_previous = cursor + _byte_offset(LINE_GAP_SECONDS) if cursor else 0
            start = max(_byte_offset(at), after_previous)
            if start >= limit:
                break
            track = tracks[channel]
            track += bytes(max(0, start - len(track)))
            track[start : start + len(pcm)] = pcm
            cursor = start + len(pcm)
        length = min(max(_byte_offset(self._length), cursor), limit)
        agent, person = (bytes(t[:length]).ljust(length, b"\0") for t in tracks)
        return agent, person


def _byte_offset(seconds: float) -> int:
    return int(seconds * SAMPLE_RATE) * SAMPLE_WIDTH


def _speak(voice: Synthesizer | None, text: str) -> bytes:
    if voice is None:
        return b""
    try:
        return voice.synthesize(text, SAMPLE_RATE)
    except Exception:
        # A line that cannot be spoken is silence in the recording; the call is still whole.
        log.warning("simulated recording: a line could not be spoken", exc_info=True)
        return b""


def outcome_of(number: str) -> str:
    """``busy``, ``no_answer``, ``failed``, ``voicemail`` or ``human`` for a dialled number."""
    digits = "".join(c for c in number if c.isdigit())
    return {"0001": "busy", "0002": "no_answer", "0003": "failed", "0004": "voicemail"}.get(
        digits[-4:], "human"
    )


class SimulatedTelephony(TelephonyAdapter):
    def __init__(
        self, call_seconds: float, script: Sequence[str] = (), *, speak: bool = True
    ) -> None:
        self.call_seconds = call_seconds
        self.script = tuple(script)
        #: The simulated person's voice in recordings (none without espeak-ng: silence).
        self.person_voice: Synthesizer | None = (
            EspeakSynthesizer() if speak and shutil.which("espeak-ng") else None
        )
        self._route_inbound: InboundRouter | None = None
        self._inbound: set[asyncio.Task[None]] = set()
        #: Every number dialled, in order (tests count dial attempts with it).
        self.dialled: list[str] = []
        #: Every summary a warm transfer's person was told, in order (tests read it).
        self.briefed: list[str] = []

    async def start(self, route_inbound: InboundRouter) -> None:
        self._route_inbound = route_inbound

    async def stop(self) -> None:
        self._route_inbound = None

    async def dial(self, request: DialRequest) -> Connection:
        self.dialled.append(request.to_number)
        outcome = outcome_of(request.to_number)
        if outcome == "busy":
            raise DialFailed("busy", "486 Busy Here (simulated)")
        if outcome == "no_answer":
            raise DialFailed("no_answer", "480 Temporarily Unavailable (simulated)")
        if outcome == "failed":
            raise DialFailed("failed", "503 Service Unavailable (simulated)")
        answered_by: AnsweredBy = "voicemail" if outcome == "voicemail" else "human"
        return SimulatedConnection(
            answered_by, self.call_seconds, self.script, self.person_voice, self.briefed
        )

    async def ring(self, offer: InboundOffer) -> bool:
        """Simulate an inbound call: False when refused (SIP would answer 404), else the call is
        answered and held in the background until it ends."""
        if self._route_inbound is None:
            return False
        runner = await self._route_inbound(offer)
        if runner is None:
            return False
        connection = SimulatedConnection(
            "human", self.call_seconds, self.script, self.person_voice, self.briefed
        )

        async def hold() -> None:
            try:
                await runner(connection)
            except Exception:
                log.exception("inbound call failed", extra={"call_ref": offer.call_ref})
            finally:
                with contextlib.suppress(Exception):
                    await connection.hangup()

        task = asyncio.create_task(hold(), name=f"inbound-{offer.call_ref}")
        self._inbound.add(task)
        task.add_done_callback(self._inbound.discard)
        return True
