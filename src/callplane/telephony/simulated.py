"""The simulated phone network (docs/engine-core.md): every outcome reachable without a phone line.

The far end is chosen by the last four digits of the number dialled:

    0001  busy          0003  failed
    0002  no_answer     0004  answered by voicemail (a greeting, then silence)
    else  answered by a person, who says "Hello?" once and then listens

An answered call ends from the far end after ``call_seconds``. Media is text
(``TextFrame``): the engine's conversation runs unchanged, without speech recognition or
synthesis. The recording holds what was said, as a phone call's does: once the call is over,
each line is spoken — the agent's in its voice (``speak_as``) on channel 0, the person's in
espeak-ng on channel 1 — at the moment it was said, or after the line before it ends (text
arrives faster than speech), so a demo call can be listened to.

The recording is the call's clock: text takes no time, speech does, so the recording's
``timeline`` maps each moment of the conversation to its place in the recording, and the engine
stamps the transcript and the call's length with it (a call whose three tool uses took a second
of text is as long as its recording says).

``script`` makes the person talk back: after "Hello?", each line the agent plays is answered
with the next line of the script, while lines remain (CALLPLANE_SIMULATED_SCRIPT, or one call's
``simulate.script``, whose lines also say how long the person waits after the agent's line).
With a call's own script the person stays until the agent has answered the last line, then
hangs up after ``call_seconds`` of quiet.

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
    ScriptLine,
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
#: With a call's own script, how long the person waits for the agent's answer to a line.
REPLY_PATIENCE_SECONDS = 120.0
#: A line's length when there is no voice to speak it (espeak-ng's default pace, ~14 characters
#: a second), so the timeline stays that of a spoken call.
CHARACTERS_PER_SECOND = 14.0
#: A transcript entry this close to a line of its side is that line (rounding, bookkeeping).
SAME_MOMENT_SECONDS = 0.05
#: Transcript times are rounded to the millisecond.
ROUNDING_SECONDS = 0.0005
VOICEMAIL_GREETING = "You have reached voicemail. Please leave a message after the tone."


class SimulatedConnection(Connection):
    def __init__(
        self,
        answered_by: AnsweredBy,
        call_seconds: float,
        script: Sequence[str | ScriptLine] = (),
        person_voice: Synthesizer | None = None,
        briefed: list[str] | None = None,
        *,
        own_script: bool = False,
    ) -> None:
        super().__init__(media="text", answered_by=answered_by)
        #: What the person answering each warm transfer was told before being put through.
        self.briefed = [] if briefed is None else briefed
        self._incoming: asyncio.Queue[Frame | None] = asyncio.Queue()
        self._ended = asyncio.Event()
        self._script = [
            line if isinstance(line, ScriptLine) else ScriptLine(line, LINE_GAP_SECONDS)
            for line in (script if answered_by == "human" else ())
        ]
        #: Everything the agent played, in order (for tests and logs).
        self.played: list[Frame] = []
        self._answered = time.monotonic()
        self._person_voice = person_voice
        self._agent_voice: Synthesizer | None = None
        #: (seconds into the call, channel, text, least silence before it) of every line.
        self._lines: list[tuple[float, int, str, float]] = []
        self._call_seconds = call_seconds
        self._own_script = own_script and bool(self._script)
        # The greeting is placed when the agent hears it (``frames``): an agent that speaks
        # first has begun by then, as its line comes first in the transcript.
        self._greeting = TextFrame(GREETING if answered_by == "human" else VOICEMAIL_GREETING)
        #: When the greeting was said (placed), once it has been.
        self._greeting_said_at: float | None = None
        self._incoming.put_nowait(self._greeting)
        self._length = 0.0
        #: (seconds into the call, seconds into the recording, seconds long, channel) of each
        #: line, once rendered.
        self._anchors: list[tuple[float, float, float, int]] = []
        # A call's own script lasts as long as the conversation does (see ``play``).
        first_wait = REPLY_PATIENCE_SECONDS if self._own_script else call_seconds
        self._timer = asyncio.get_running_loop().call_later(first_wait, self._end, "remote")

    def _end(self, by: EndedBy) -> None:
        if self._ended.is_set():
            return
        self.ended_by = by
        self._length = min(time.monotonic() - self._answered, MAX_RECORDING_SECONDS)
        self._timer.cancel()
        self._ended.set()
        self._incoming.put_nowait(None)

    def _hang_up_in(self, seconds: float) -> None:
        self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(seconds, self._end, "remote")

    async def frames(self) -> AsyncIterator[Frame]:
        while not self._ended.is_set() or not self._incoming.empty():
            frame = await self._incoming.get()
            if frame is None:
                return
            if frame is self._greeting:
                # Heard with the moment it was said: before a line said in answer to the agent.
                frame = TextFrame(frame.text, said_at=self._place_greeting())
            yield frame

    async def play(self, frame: Frame) -> None:
        if self._ended.is_set():
            return
        self.played.append(frame)
        if isinstance(frame, TextFrame):
            self._lines.append(
                (time.monotonic() - self._answered, AGENT, frame.text, LINE_GAP_SECONDS)
            )
        if self._script:
            self._place_greeting()  # said before the answer to the agent's line
            line = self._script.pop(0)
            self._say(line.say, line.after_seconds)
            if self._own_script:
                self._hang_up_in(REPLY_PATIENCE_SECONDS)
        elif self._own_script:
            # The agent answered the last line: the person listens a moment, then hangs up.
            self._hang_up_in(self._call_seconds)

    def _place_greeting(self) -> float:
        if self._greeting_said_at is None:
            self._greeting_said_at = time.monotonic()
            at = self._greeting_said_at - self._answered
            self._lines.append((at, PERSON, self._greeting.text, LINE_GAP_SECONDS))
        return self._greeting_said_at

    def _say(self, text: str, after_seconds: float) -> None:
        now = time.monotonic()
        self._lines.append((now - self._answered, PERSON, text, after_seconds))
        self._incoming.put_nowait(TextFrame(text, said_at=now))

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

    # Tools (docs/tools.md): every transfer is accepted but to numbers ending in 0005 (busy), and
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
        return Recording(
            "audio/wav",
            stereo_wav(agent, person),
            len(agent) / BYTES_PER_SECOND,
            timeline=self.positions,
        )

    def positions(self, moments: Sequence[tuple[float, str | None]]) -> list[float]:
        """Seconds into the recording of each (seconds into the call, role) in call order.

        A line (role ``user`` or ``assistant``; ``caller_ended``: where the person's line ends)
        is where the recording has it. Text is instant: the agent's line and the person's
        answer to it are said within a millisecond, and the times given are rounded to one, so
        each line is matched to the nearest unmatched line of its side (the first of those the
        rounding cannot tell apart).
        Anything else (a tool's call and answer) belongs to the agent's latest line: as much
        after its start as it was said, and never after the line that followed it."""
        used: set[int] = set()
        found = []
        for at, role in moments:
            side = {"user": PERSON, "caller_ended": PERSON, "assistant": AGENT}.get(role or "")
            near = {
                i: abs(said - at)
                for i, (said, _start, _length, channel) in enumerate(self._anchors)
                if channel == side and i not in used and abs(said - at) <= SAME_MOMENT_SECONDS
            }
            # The nearest, or the first of those as near as the rounding can tell.
            closest = min(near.values(), default=0.0)
            line = next((i for i, d in near.items() if d <= closest + ROUNDING_SECONDS), None)
            if line is not None:
                used.add(line)
                _said, start, length, _channel = self._anchors[line]
                found.append(round(start + (length if role == "caller_ended" else 0.0), 3))
            else:
                found.append(self._after_agent_line(at))
        return found

    def _after_agent_line(self, at: float) -> float:
        latest = None
        for i, (said, _start, _length, channel) in enumerate(self._anchors):
            if said > at + ROUNDING_SECONDS:
                break
            if channel == AGENT:
                latest = i
        if latest is None:
            return round(at, 3)
        said, start, _length, _channel = self._anchors[latest]
        place = start + max(0.0, at - said)
        if latest + 1 < len(self._anchors):
            place = min(place, self._anchors[latest + 1][1])
        return round(place, 3)

    def _render(self) -> tuple[bytes, bytes]:
        """Both channels, each line spoken where it was said or after the line before it has
        ended (blocking: synthesis)."""
        tracks = [bytearray(), bytearray()]
        voices = [self._agent_voice or self._person_voice, self._person_voice]
        limit = MAX_RECORDING_SECONDS * BYTES_PER_SECOND
        cursor = 0
        anchors: list[tuple[float, float, float, int]] = []
        for at, channel, text, after in self._lines:
            pcm = _speak(voices[channel], text)
            placed = _byte_offset(self._mapped(anchors, at))
            start = max(placed, cursor + _byte_offset(after) if cursor else 0)
            if start >= limit:
                break
            anchors.append((at, start / BYTES_PER_SECOND, len(pcm) / BYTES_PER_SECOND, channel))
            track = tracks[channel]
            track += bytes(max(0, start - len(track)))
            track[start : start + len(pcm)] = pcm
            cursor = start + len(pcm)
        self._anchors = anchors
        # The person hung up when they did, unless a line was still being said then.
        length = min(max(_byte_offset(self._length), cursor), limit)
        agent, person = (bytes(t[:length]).ljust(length, b"\0") for t in tracks)
        return agent, person

    @staticmethod
    def _mapped(anchors: list[tuple[float, float, float, int]], at: float) -> float:
        """``at`` after the last line placed so far, as much later as it was said."""
        if not anchors:
            return at
        said, start, _length, _side = anchors[-1]
        return start + max(0.0, at - said)


def _byte_offset(seconds: float) -> int:
    return int(seconds * SAMPLE_RATE) * SAMPLE_WIDTH


def _speak(voice: Synthesizer | None, text: str) -> bytes:
    """The line spoken; silence as long as it would take to say when it cannot be (the
    timeline stays that of a spoken call)."""
    if voice is not None:
        try:
            return voice.synthesize(text, SAMPLE_RATE)
        except Exception:
            # A line that cannot be spoken is silence in the recording; the call is still whole.
            log.warning("simulated recording: a line could not be spoken", exc_info=True)
    return bytes(_byte_offset(len(text) / CHARACTERS_PER_SECOND))


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
        own = request.script is not None
        return SimulatedConnection(
            answered_by,
            self.call_seconds,
            request.script if request.script is not None else self.script,
            self.person_voice,
            self.briefed,
            own_script=own,
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
