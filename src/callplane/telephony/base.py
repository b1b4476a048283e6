"""The telephony adapter interface: the one seam between the engine and a phone network.

Media model
    Audio is 8 kHz, 16-bit signed little-endian, mono PCM (the telephone band: what G.711 carries),
    in frames of 20 ms (``FRAME_BYTES`` = 320 bytes). A connection whose ``media`` is ``"text"``
    (the simulated network) carries whole utterances as ``TextFrame`` instead, so the engine's
    turn loop runs unchanged, with speech recognition and synthesis skipped.

Outbound
    ``dial`` returns a ``Connection`` once the far end answers, or raises ``DialFailed`` with the
    outcome the lifecycle table of docs/engine-core.md names (``busy``, ``no_answer``, ``failed``).
    Cancelling the awaiting task abandons the attempt (a SIP adapter sends CANCEL).

Inbound
    The adapter offers every incoming call to the ``InboundRouter`` given to ``start``. The router
    answers ``None`` (the adapter refuses the call: SIP 404) or a coroutine function that holds
    the conversation; the adapter answers the call, awaits that function with the connection and
    hangs up when it returns.

Ending
    Either side may end a call: ``Connection.hangup()`` from ours; the far end's hang-up ends the
    ``frames()`` iteration and sets ``ended_by`` to ``"remote"``. ``wait_ended()`` returns once the
    call is over, whoever ended it.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from callplane.speech.base import Synthesizer

SAMPLE_RATE = 8000
SAMPLE_WIDTH = 2
FRAME_MS = 20
FRAME_SAMPLES = SAMPLE_RATE * FRAME_MS // 1000
FRAME_BYTES = FRAME_SAMPLES * SAMPLE_WIDTH

DialOutcome = Literal["busy", "no_answer", "failed"]
AnsweredBy = Literal["human", "voicemail"]
EndedBy = Literal["remote", "local"]


@dataclass(frozen=True)
class AudioFrame:
    """Telephone-band PCM (see the module docstring); normally one 20 ms frame."""

    pcm: bytes


@dataclass(frozen=True)
class TextFrame:
    """A whole utterance as text, on connections whose ``media`` is ``"text"``."""

    text: str
    #: When the far end began saying it (``time.monotonic()``), if earlier than it is read.
    said_at: float | None = None


Frame = AudioFrame | TextFrame


@dataclass(frozen=True)
class DialRequest:
    to_number: str
    from_number: str | None
    ring_timeout_seconds: float
    #: Carried into the adapter's log lines so one call can be followed end to end.
    call_ref: str = ""
    #: A SIP URI called directly rather than ``to_number`` through the trunk (a warm
    #: transfer's ``sip`` destination).
    uri: str | None = None
    #: Extra SIP headers on the INVITE (a warm transfer's ``X-Callplane-Screen-Pop``).
    headers: tuple[tuple[str, str], ...] = ()
    #: The simulated network's person for this call: what they say, in order (other networks
    #: never get one: the API refuses it).
    script: tuple[ScriptLine, ...] | None = None


@dataclass(frozen=True)
class ScriptLine:
    """A line the simulated person says once the agent has spoken, ``after_seconds`` after the
    agent's line ends."""

    say: str
    after_seconds: float


@dataclass(frozen=True)
class InboundOffer:
    to_number: str
    from_number: str | None
    #: The network's own id for the call (a SIP Call-ID), for logs.
    call_ref: str = ""


class DialFailed(Exception):
    """The far end did not answer; ``outcome`` is the terminal status it leads to."""

    def __init__(self, outcome: DialOutcome, reason: str) -> None:
        super().__init__(f"{outcome}: {reason}")
        self.outcome: DialOutcome = outcome
        self.reason = reason


@dataclass(frozen=True)
class Recording:
    """The whole call as the adapter heard and sent it."""

    content_type: str  # e.g. "audio/wav"
    data: bytes
    duration_seconds: float
    #: Where in the recording moments of the call are (seconds since answered and the
    #: transcript entry's role, in call order, in; seconds into the recording out), when the
    #: two clocks differ: the simulated network's text is said faster than it could be spoken,
    #: its recording says it at speaking pace. None: the same clock.
    timeline: Callable[[Sequence[tuple[float, str | None]]], list[float]] | None = None


#: The keys ``send_dtmf`` may press.
DTMF_PATTERN = "^[0-9*#A-D]{1,64}$"


class TelephonyFeatureMissing(Exception):
    """The network of this call cannot do what a tool asked."""


@dataclass(frozen=True)
class TransferTarget:
    #: E.164 (goes out through the trunk) or None when ``sip`` is given.
    number: str | None
    sip: str | None
    mode: Literal["cold", "warm"]
    #: ``X-Callplane-Screen-Pop`` on the REFER.
    screen_pop_token: str


@dataclass(frozen=True)
class TransferOutcome:
    accepted: bool
    #: Why not, in words the agent can repeat to the caller (``busy``, ``refused (405)``).
    reason: str = ""
    #: The transfer leg's SIP Call-ID (handoff metadata).
    leg_call_id: str = ""


#: Tells the person who answered a warm transfer what the call is about (the tool speaks a
#: summary on their connection), before the caller is put through.
Brief = Callable[["Connection"], Awaitable[None]]


@dataclass
class Connection(abc.ABC):
    """One answered call."""

    media: Literal["audio", "text"]
    #: Set by adapters that know who answered (the simulated network); ``None`` leaves it to
    #: the engine's detection on the first audio it hears.
    answered_by: AnsweredBy | None = None
    ended_by: EndedBy | None = field(default=None, init=False)
    #: Why the network ended the call, when it knows more than ``ended_by`` says (the far
    #: end's audio stopped: CALLPLANE_MEDIA_TIMEOUT_SECONDS); recorded in ``call.ended``.
    end_reason: str | None = field(default=None, init=False)

    @abc.abstractmethod
    def frames(self) -> AsyncIterator[Frame]:
        """The far end's media, as it arrives; the iteration ends when the call ends."""

    @abc.abstractmethod
    async def play(self, frame: Frame) -> None:
        """Queue media toward the far end; the adapter paces audio in real time."""

    @abc.abstractmethod
    async def interrupt(self) -> None:
        """Drop whatever is queued and not yet played (barge-in)."""

    @abc.abstractmethod
    async def hangup(self) -> None:
        """End the call from our side (idempotent)."""

    @abc.abstractmethod
    async def wait_ended(self) -> EndedBy:
        """Return once the call is over."""

    async def recording(self) -> Recording | None:
        """The call's audio, after it ended; ``None`` when the network records nothing."""
        return None

    def recognition_audio(self, pcm: bytes) -> tuple[bytes, int]:
        """What to recognise for ``pcm`` (a stretch of the frames heard), and its sample rate:
        ``pcm`` itself by default; a network that hears more than the telephone band (a web
        call) gives its wider-band audio of the same stretch."""
        return pcm, SAMPLE_RATE

    # Tools (docs/tools.md): a network that cannot do one raises ``TelephonyFeatureMissing``.

    async def send_dtmf(self, digits: str) -> None:
        """Press ``digits`` (``DTMF_PATTERN``) toward the far end."""
        raise TelephonyFeatureMissing("this phone network cannot send keypresses")

    async def transfer(self, target: TransferTarget, brief: Brief | None = None) -> TransferOutcome:
        """Hand the far end to ``target``; the outcome says whether it was accepted or why not
        (the conversation goes on). Cold, the agent's leg then ends. Warm, the destination is
        dialled, ``brief`` is given the person's connection once they answer, then the two are
        bridged (``handed_over``) until either hangs up."""
        raise TelephonyFeatureMissing("this phone network cannot transfer calls")

    @property
    def handed_over(self) -> bool:
        """A warm transfer put the far end through to a person: the agent is out of the call,
        which goes on until the bridge ends (``hangup`` still ends it at once)."""
        return False

    def speak_as(self, voice: Synthesizer | None) -> None:
        """The agent's voice, for a network that renders its text lines as audio itself (the
        simulated one, in its recording); audio networks ignore it: they carry speech."""
        return None


ConversationRunner = Callable[[Connection], Awaitable[None]]
InboundRouter = Callable[[InboundOffer], Awaitable[ConversationRunner | None]]


class TelephonyAdapter(abc.ABC):
    """A phone network. One instance per worker process, shared by all its calls."""

    @abc.abstractmethod
    async def start(self, route_inbound: InboundRouter) -> None:
        """Begin accepting inbound calls (adapters without inbound calls may ignore it)."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Stop accepting calls; calls in progress are left to their owners."""

    @abc.abstractmethod
    async def dial(self, request: DialRequest) -> Connection:
        """Place a call; return once answered, or raise ``DialFailed``."""
