"""Benchmark: false turn ends and end-of-turn latency, model vs smart vs silence endpointing.

    .venv/bin/python bench/endpointing.py [--modes smart,silence]

The corpus is made on the spot with espeak-ng and sox (nothing binary is committed): callers
who pause mid-sentence ("My phone number is … four one five …", "I'd like to … book a
cleaning") and callers who say a complete sentence. Each utterance is played in real time
(20 ms frames, as RTP arrives) to the real listener (WebRTC VAD, end of turn, Whisper tiny.en),
then silence until its last words are recognised.

false cut  an utterance heard as more than one turn (the agent would have answered mid-sentence)
latency    from the caller's last voiced frame to the turn's text being ready: what the agent
           waits before its brain can start (its reply adds the brain and the first sentence)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import wave
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from callplane.engine.conversation.endpointing import Endpointing  # noqa: E402
from callplane.engine.conversation.listening import CallerSaid, Listener  # noqa: E402
from callplane.settings import Settings  # noqa: E402
from callplane.speech.transcriber import WhisperTranscriber, shared_transcriber  # noqa: E402
from callplane.telephony.base import FRAME_BYTES, AudioFrame, Connection, EndedBy, Frame  # noqa: E402

#: (first words, pause seconds, the rest): people thinking mid-sentence.
PAUSED = [
    ("My phone number is", 0.65, "four one five, five five five, zero one three two."),
    ("I'd like to", 0.6, "book a cleaning for next week."),
    ("My account number is", 0.7, "seven seven two, four nine one."),
    ("Can I speak with the", 0.6, "person who handles billing?"),
    ("I was calling about my", 0.65, "appointment on Friday."),
    ("The address is", 0.6, "twelve Main Street, Springfield."),
    ("I think I need to", 0.7, "change the time, if that is possible."),
    ("It's for my daughter and", 0.6, "she is eight years old."),
]
COMPLETE = [
    "I would like to book a cleaning, please.",
    "Can you move my appointment to Friday?",
    "That works for me, thank you.",
    "No, that is everything for today.",
    "Yes, please send me a reminder.",
    "I'm calling about my bill.",
    "What time do you open tomorrow?",
    "Great, see you then.",
]


@dataclass
class Utterance:
    name: str
    pcm: bytes
    #: How many turns a listener should hear in it (one: the pause is not the end).
    turns: int = 1


def sox_corpus(directory: Path) -> list[Utterance]:
    """espeak-ng speaks each part; sox trims espeak's own silences, inserts the pause and
    resamples to the telephone rate."""

    def say(text: str, name: str) -> Path:
        raw, trimmed = directory / f"{name}-raw.wav", directory / f"{name}.wav"
        subprocess.run(["espeak-ng", "-s", "150", "-w", str(raw), text], check=True)
        # Leading and trailing silence off: the pause is exactly the one inserted.
        trim = ["silence", "1", "0.02", "0.5%", "reverse", "silence", "1", "0.02", "0.5%"]
        subprocess.run(["sox", str(raw), str(trimmed), *trim, "reverse"], check=True)
        return trimmed

    def pcm(parts: list[Path | float], name: str) -> bytes:
        inputs: list[str] = []
        for n, part in enumerate(parts):
            if isinstance(part, float):
                gap = directory / f"{name}-gap{n}.wav"
                subprocess.run(
                    [
                        "sox",
                        "-n",
                        "-r",
                        "22050",
                        "-c",
                        "1",
                        "-b",
                        "16",
                        str(gap),
                        "trim",
                        "0",
                        str(part),
                    ],
                    check=True,
                )
                inputs.append(str(gap))
            else:
                inputs.append(str(part))
        out = directory / f"{name}-8k.wav"
        subprocess.run(["sox", *inputs, "-r", "8000", "-b", "16", "-c", "1", str(out)], check=True)
        with wave.open(str(out)) as wav:
            return wav.readframes(wav.getnframes())

    corpus = []
    for n, (head, pause, tail) in enumerate(PAUSED):
        parts: list[Path | float] = [say(head, f"p{n}a"), pause, say(tail, f"p{n}b")]
        corpus.append(Utterance(f"{head} … {tail}", pcm(parts, f"p{n}")))
    for n, text in enumerate(COMPLETE):
        corpus.append(Utterance(text, pcm([say(text, f"c{n}")], f"c{n}")))
    return corpus


class RealTimeCaller(Connection):
    """Plays one utterance in real time, then silence until told the last turn was heard."""

    def __init__(self, pcm: bytes) -> None:
        super().__init__(media="audio")
        self._pcm = pcm
        self.heard_all = asyncio.Event()
        self.spoke_until = 0.0

    async def frames(self) -> AsyncIterator[Frame]:
        clock = time.monotonic()
        pcm = self._pcm
        for offset in range(0, len(pcm), FRAME_BYTES):
            clock += 0.02
            await asyncio.sleep(max(0.0, clock - time.monotonic()))
            yield AudioFrame(pcm[offset : offset + FRAME_BYTES].ljust(FRAME_BYTES, b"\0"))
        self.spoke_until = time.monotonic()
        deadline = clock + 15
        while not self.heard_all.is_set() and clock < deadline:
            clock += 0.02
            await asyncio.sleep(max(0.0, clock - time.monotonic()))
            yield AudioFrame(bytes(FRAME_BYTES))

    async def play(self, frame: Frame) -> None:
        pass

    async def interrupt(self) -> None:
        pass

    async def hangup(self) -> None:
        pass

    async def wait_ended(self) -> EndedBy:
        return "remote"


async def hear(
    utterance: Utterance, endpointing: Endpointing, transcriber: WhisperTranscriber
) -> tuple[list[str], float]:
    """The turns heard, and seconds from the last voiced frame to the last turn's text."""
    caller = RealTimeCaller(utterance.pcm)
    listener = Listener(caller, transcriber=transcriber, endpointing=endpointing)
    turns: list[str] = []
    latency = float("nan")
    async for event in listener.events():
        if isinstance(event, CallerSaid):
            turns.append(event.text)
            if caller.spoke_until and event.ended_at > caller.spoke_until - 0.3:
                latency = time.monotonic() - caller.spoke_until
                caller.heard_all.set()
    return turns, latency


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(modes: list[str], verbose: bool) -> None:
    # The worker's own live transcriber (engine/providers.py), whatever it is set up to do.
    transcriber = shared_transcriber(Settings(_env_file=None), "live")  # type: ignore[call-arg]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = sox_corpus(Path(tmp))
    print(
        f"corpus: {len(PAUSED)} paused mid-sentence, {len(COMPLETE)} complete; load "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    transcriber.transcribe(corpus[0].pcm, 8000)  # warm up
    rows = []
    for mode in modes:
        endpointing = Endpointing(mode=mode)  # type: ignore[arg-type]
        cuts = {"paused": 0, "complete": 0}
        latencies: dict[str, list[float]] = {"paused": [], "complete": []}
        for n, utterance in enumerate(corpus):
            kind = "paused" if n < len(PAUSED) else "complete"
            turns, latency = await hear(utterance, endpointing, transcriber)
            cuts[kind] += len(turns) > utterance.turns
            if latency == latency:  # not NaN: the last words were heard
                latencies[kind].append(latency * 1000)
            if verbose:
                print(f"  {mode:8} {kind:8} {latency * 1000:6.0f} ms {turns}")
        rows.append((mode, cuts, latencies))
    print(f"{'mode':8} {'false cuts':>16} {'latency p50 / p95 (ms)':>34}")
    for mode, cuts, latencies in rows:
        every = latencies["paused"] + latencies["complete"]
        print(
            f"{mode:8} paused {cuts['paused']}/{len(PAUSED)}, complete {cuts['complete']}/"
            f"{len(COMPLETE)}   complete {percentile(latencies['complete'], 0.5):.0f} / "
            f"{percentile(latencies['complete'], 0.95):.0f}, all "
            f"{percentile(every, 0.5):.0f} / {percentile(every, 0.95):.0f}, "
            f"mean {statistics.fmean(every):.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--modes", default="model,smart,silence")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    asyncio.run(run(args.modes.split(","), args.verbose))


if __name__ == "__main__":
    main()
