"""Benchmark: false turn ends and end-of-turn latency, model vs smart vs silence endpointing;
backchannels and interruptions over the agent's line; what one end-of-turn scoring costs.

    .venv/bin/python bench/endpointing.py [--modes smart,silence] [--parts turns,over,cost]

The corpora are made on the spot with espeak-ng and sox (nothing binary is committed): callers
who pause mid-sentence ("My phone number is … four one five …", "I'd like to … book a
cleaning"), callers who say a complete sentence with a comma in it ("That works for me, thank
you."), backchannels ("uh-huh", "yeah") and real interruptions ("Wait, I have a question.").
Each utterance is played in real time (20 ms frames, as RTP arrives) to the real listener
(WebRTC VAD, end of turn, the worker's live Whisper), then silence until its last words are
recognised.

turns (each mode side by side)
  false cut  an utterance heard as more than one turn (the agent would have answered
             mid-sentence)
  latency    from the caller's last voiced frame to the turn's text being ready: what the agent
             waits before its brain can start (its reply adds the brain and the first sentence)
over (the real turn loop, the agent speaking a long line when the caller speaks)
  cut        the line was cut off (a backchannel must not, an interruption must)
  stopped    from the caller's first voiced frame to the agent's audio stopping (held or cut)
  decided    from the caller's first voiced frame to the line being cut (interruptions)
cost
  CPU of one scoring (thread time: the model's share of a core), by stage
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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

from callplane.engine.agent import AgentSpec  # noqa: E402
from callplane.engine.conversation.endpointing import Endpointing  # noqa: E402
from callplane.engine.conversation.listening import CallerSaid, Listener  # noqa: E402
from callplane.engine.conversation.speaking import Speaker  # noqa: E402
from callplane.engine.conversation.transcript import TranscriptLog  # noqa: E402
from callplane.engine.conversation.turn_loop import TurnLoop  # noqa: E402
from callplane.settings import Settings  # noqa: E402
from callplane.speech.base import Synthesizer  # noqa: E402
from callplane.speech.transcriber import WhisperTranscriber, shared_transcriber  # noqa: E402
from callplane.telephony.base import (  # noqa: E402
    FRAME_BYTES,
    SAMPLE_RATE,
    AudioFrame,
    Connection,
    EndedBy,
    Frame,
)

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
#: Complete sentences, each with a comma: a text guess takes "That works for me," for the end.
COMPLETE = [
    "I would like to book a cleaning, please.",
    "Okay, can you move my appointment to Friday?",
    "That works for me, thank you.",
    "No, that is everything for today.",
    "Yes, please send me a reminder.",
    "Well, I'm calling about my bill.",
    "Sorry, what time do you open tomorrow?",
    "Great, see you then.",
]
#: What a listener says while the other talks: must not cut the agent's line.
BACKCHANNELS = ["Uh-huh.", "Yeah.", "Okay.", "Right.", "Mm-hmm.", "Yep.", "Sure.", "All right."]
#: Real interruptions: must cut it.
INTERRUPTIONS = [
    "Wait, I have a question.",
    "Sorry, can you repeat that?",
    "No, that is not what I asked.",
    "Actually, I need Tuesday.",
    "Hold on a second, please.",
    "Can you speak more slowly?",
    "I already have an appointment.",
    "Stop.",
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
    for n, text in enumerate(BACKCHANNELS + INTERRUPTIONS):
        corpus.append(Utterance(text, pcm([say(text, f"o{n}")], f"o{n}")))
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


class OverTheAgent(RealTimeCaller):
    """The caller speaks 1 s into the agent's line; says when the agent's audio stopped."""

    LEAD_SECONDS = 1.0

    def __init__(self, pcm: bytes) -> None:
        super().__init__(bytes(int(self.LEAD_SECONDS * SAMPLE_RATE) * 2) + pcm)
        self.began = 0.0
        self.stops: list[float] = []

    async def frames(self) -> AsyncIterator[Frame]:
        self.began = time.monotonic()
        async for frame in super().frames():
            yield frame

    async def interrupt(self) -> None:
        self.stops.append(time.monotonic())


class Droning(Synthesizer):
    """The agent's long line: quiet audio, at once (the caller's sound is what is measured)."""

    def synthesize(self, text: str, sample_rate: int) -> bytes:
        return bytes(int(len(text) * 0.06 * sample_rate) * 2)


async def over_the_agent(
    utterance: Utterance, endpointing: Endpointing, transcriber: WhisperTranscriber
) -> tuple[bool, float, float]:
    """Whether the caller's utterance cut the agent's line; seconds from their first voiced
    frame to the agent's audio stopping, and to the line being cut (NaN: it was not)."""
    caller = OverTheAgent(utterance.pcm)
    line = "This is a long line the agent says while the caller listens. " * 4
    began = time.monotonic()
    loop = TurnLoop(
        connection=caller,
        listener=Listener(caller, transcriber=transcriber, endpointing=endpointing),
        speaker=Speaker(caller, Droning()),
        transcript=TranscriptLog([], lambda: time.monotonic() - began),
        spec=AgentSpec(first_message=line.strip()),
        brain=None,
        report=_ignore,
    )
    run = asyncio.create_task(loop.run())
    voiced = _first_voiced(utterance.pcm)
    await asyncio.sleep(OverTheAgent.LEAD_SECONDS + len(utterance.pcm) / 16000 + 2.5)
    caller.heard_all.set()
    run.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await run
    reply = loop._reply  # noqa: SLF001 (a bench reads the line's fate)
    cut = reply is not None and reply.interrupted
    onset = caller.began + OverTheAgent.LEAD_SECONDS + voiced
    stopped = caller.stops[0] - onset if caller.stops else float("nan")
    decided = caller.stops[-1] - onset if cut and caller.stops else float("nan")
    return cut, stopped, decided


async def _ignore(_type: str, _data: dict[str, object]) -> None:
    pass


def _first_voiced(pcm: bytes) -> float:
    """Seconds into ``pcm`` of its first loud 20 ms frame."""
    from array import array

    for offset in range(0, len(pcm), FRAME_BYTES):
        frame = array("h", pcm[offset : offset + FRAME_BYTES])
        if frame and max(abs(x) for x in frame) > 1000:
            return offset / 16000
    return 0.0


def cost(corpus: list[Utterance], rounds: int = 5) -> None:
    """CPU per scoring, by stage, as the listener scores a pause (8 kHz audio in)."""
    import numpy as np

    from callplane.speech.resampling import resample_pcm
    from callplane.speech.turn_model import MODEL_RATE, shared_model

    model = shared_model()
    stages = {"resample": 0.0, "features": 0.0, "model": 0.0, "whole": 0.0}
    count = 0
    for _ in range(rounds):
        for utterance in corpus:
            pcm = utterance.pcm
            t0 = time.thread_time()
            audio = np.frombuffer(resample_pcm(pcm, 8000, MODEL_RATE), dtype="<i2")
            t1 = time.thread_time()
            batch = model._features(audio[-128000:].astype(np.float32) / 32768.0)[np.newaxis]  # noqa: SLF001
            t2 = time.thread_time()
            model._session.run(None, {"input_features": batch})  # noqa: SLF001
            t3 = time.thread_time()
            model.probability(pcm, 8000)
            t4 = time.thread_time()
            for stage, spent in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                stages[stage] += spent
            count += 1
    print(
        f"cost of one scoring (CPU ms, mean of {count}; load {os.getloadavg()[0]:.1f}): "
        + ", ".join(f"{stage} {1000 * spent / count:.1f}" for stage, spent in stages.items())
    )


async def run(modes: list[str], parts: list[str], verbose: bool) -> None:
    # The worker's own live transcriber (engine/providers.py), whatever it is set up to do.
    transcriber = shared_transcriber(Settings(_env_file=None), "live")  # type: ignore[call-arg]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = sox_corpus(Path(tmp))
    turns_corpus = corpus[: len(PAUSED) + len(COMPLETE)]
    over_corpus = corpus[len(turns_corpus) :]
    print(
        f"corpus: {len(PAUSED)} paused mid-sentence, {len(COMPLETE)} complete with a comma, "
        f"{len(BACKCHANNELS)} backchannels, {len(INTERRUPTIONS)} interruptions; load "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    transcriber.transcribe(corpus[0].pcm, 8000)  # warm up
    if "cost" in parts:
        cost(turns_corpus)
    rows = []
    for mode in modes if "turns" in parts else []:
        endpointing = Endpointing(mode=mode)  # type: ignore[arg-type]
        cuts = {"paused": 0, "complete": 0}
        latencies: dict[str, list[float]] = {"paused": [], "complete": []}
        for n, utterance in enumerate(turns_corpus):
            kind = "paused" if n < len(PAUSED) else "complete"
            turns, latency = await hear(utterance, endpointing, transcriber)
            cuts[kind] += len(turns) > utterance.turns
            if latency == latency:  # not NaN: the last words were heard
                latencies[kind].append(latency * 1000)
            if verbose:
                print(f"  {mode:8} {kind:8} {latency * 1000:6.0f} ms {turns}")
        rows.append((mode, cuts, latencies))
    if rows:
        print(
            f"{'mode':8} {'false cuts':>16} {'latency p50 / p95 (ms)':>34}"
            f"  (load {os.getloadavg()[0]:.1f})"
        )
    for mode, cuts, latencies in rows:
        every = latencies["paused"] + latencies["complete"]
        print(
            f"{mode:8} paused {cuts['paused']}/{len(PAUSED)}, complete {cuts['complete']}/"
            f"{len(COMPLETE)}   complete {percentile(latencies['complete'], 0.5):.0f} / "
            f"{percentile(latencies['complete'], 0.95):.0f}, all "
            f"{percentile(every, 0.5):.0f} / {percentile(every, 0.95):.0f}, "
            f"mean {statistics.fmean(every):.0f}"
        )
    if "over" in parts:
        await over(over_corpus, Endpointing(mode=modes[0]), transcriber, verbose)  # type: ignore[arg-type]


async def over(
    corpus: list[Utterance],
    endpointing: Endpointing,
    transcriber: WhisperTranscriber,
    verbose: bool,
) -> None:
    results = []
    for n, utterance in enumerate(corpus):
        cut, stopped, decided = await over_the_agent(utterance, endpointing, transcriber)
        results.append((n < len(BACKCHANNELS), cut, stopped * 1000, decided * 1000))
        if verbose:
            print(
                f"  over {utterance.name:34} cut {cut!s:5} stopped {stopped * 1000:5.0f} ms "
                f"cut at {decided * 1000:5.0f} ms"
            )
    backchannels = [r for r in results if r[0]]
    interruptions = [r for r in results if not r[0]]
    stops = [r[2] for r in interruptions if r[2] == r[2]]
    decisions = [r[3] for r in interruptions if r[3] == r[3]]
    print(
        f"over the agent's line (load {os.getloadavg()[0]:.1f}): backchannels cut "
        f"{sum(r[1] for r in backchannels)}/{len(backchannels)}; interruptions cut "
        f"{sum(r[1] for r in interruptions)}/{len(interruptions)}, audio stopped within 300 ms "
        f"{sum(s <= 300 for s in stops)}/{len(interruptions)} (p50 "
        f"{percentile(stops, 0.5) if stops else float('nan'):.0f} ms), cut decided p50 "
        f"{percentile(decisions, 0.5) if decisions else float('nan'):.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--modes", default="model,smart,silence")
    parser.add_argument("--parts", default="cost,turns,over")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    asyncio.run(run(args.modes.split(","), args.parts.split(","), args.verbose))


if __name__ == "__main__":
    main()
