"""Benchmark: how fast the agent answers, and how fast it hears.

    .venv/bin/python bench/conversation.py [--turns 12] [--parts stt,audio,simulated]

stt        Whisper tiny.en (faster-whisper, int8, the worker's settings) on espeak-ng sentences
           at 8 kHz: seconds of audio per second of CPU time ("x real time").
audio      Response latency of the whole audio turn loop: a caller's espeak-ng sentence fed in
           real time (20 ms frames, as RTP arrives), voice-activity detection, end of turn,
           Whisper, the brain (the local stub OpenAI-compatible server of the tests, streaming,
           no think time; ``--words-per-second`` paces its stream as a model's is), espeak-ng
           synthesis of the first words. Latency = from the last
           frame of the caller's speech to the first frame of the agent's reply queued for
           playback. In-process (a paced in-memory connection stands in for the SIP socket).
simulated  10 simultaneous conversations on one worker over the simulated network (text, the
           real API, worker and database; stub brain): each turn's latency beside that of a
           single conversation alone, with a brain that answers at once and one that takes
           ``--brain-ms`` to its first token.

Prints a table; numbers for the README. Runs in about a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.llm_stub import StubLLM  # noqa: E402

from callplane.brain import ChatCompletionsBrain  # noqa: E402
from callplane.engine.agent import AgentSpec  # noqa: E402
from callplane.engine.conversation.listening import Listener  # noqa: E402
from callplane.engine.conversation.speaking import Speaker  # noqa: E402
from callplane.engine.conversation.turn_loop import TranscriptLog, TurnLoop  # noqa: E402
from callplane.settings import Settings  # noqa: E402
from callplane.speech.synthesis import EspeakSynthesizer  # noqa: E402
from callplane.speech.transcriber import WhisperTranscriber, shared_transcriber  # noqa: E402
from callplane.telephony.base import FRAME_BYTES, AudioFrame, Connection, EndedBy, Frame  # noqa: E402

CALLER_LINES = [
    "Hi, I would like to move my appointment to Friday morning.",
    "Nine o'clock would be great, thank you.",
    "Can you also send me a reminder by text message?",
    "No, that is everything for today.",
]
AGENT_REPLY = "Of course, I can do that for you. Is there anything else I can help with?"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_stt(synth: EspeakSynthesizer, transcriber: WhisperTranscriber) -> None:
    audio_seconds = cpu_seconds = 0.0
    for line in CALLER_LINES * 2:
        pcm = synth.synthesize(line, 8000)
        started = time.perf_counter()
        transcriber.transcribe(pcm, 8000)
        cpu_seconds += time.perf_counter() - started
        audio_seconds += len(pcm) / 16000
    print(
        f"stt: {audio_seconds:.1f} s of speech in {cpu_seconds:.2f} s: "
        f"x{audio_seconds / cpu_seconds:.1f} real time"
    )


class PacedCaller(Connection):
    """A caller who says each line in real time, then waits out the agent's reply."""

    def __init__(self, lines: list[bytes]) -> None:
        super().__init__(media="audio")
        self._lines = lines
        self._ended = asyncio.Event()
        self.speech_ended: list[float] = []
        self.first_reply_frame: list[float] = []
        self._awaiting_reply = False

    async def frames(self) -> AsyncIterator[Frame]:
        silence = bytes(FRAME_BYTES)
        clock = time.monotonic()
        for pcm in self._lines:
            for offset in range(0, len(pcm), FRAME_BYTES):
                clock += 0.02
                await asyncio.sleep(max(0.0, clock - time.monotonic()))
                yield AudioFrame(pcm[offset : offset + FRAME_BYTES])
            self.speech_ended.append(time.monotonic())
            self._awaiting_reply = True
            # Silence until the reply's audio has arrived and had 2 s to play.
            while self._awaiting_reply or time.monotonic() < self.first_reply_frame[-1] + 2:
                clock += 0.02
                await asyncio.sleep(max(0.0, clock - time.monotonic()))
                yield AudioFrame(silence)
        self._ended.set()

    async def play(self, frame: Frame) -> None:
        if self._awaiting_reply:
            self._awaiting_reply = False
            self.first_reply_frame.append(time.monotonic())

    async def interrupt(self) -> None:
        pass

    async def hangup(self) -> None:
        self._ended.set()

    async def wait_ended(self) -> EndedBy:
        await self._ended.wait()
        return "remote"


async def bench_audio(
    synth: EspeakSynthesizer,
    transcriber: WhisperTranscriber,
    turns: int,
    words_per_second: float = 0.0,
) -> list[float]:
    lines = [synth.synthesize(CALLER_LINES[n % len(CALLER_LINES)], 8000) for n in range(turns)]
    # Espeak pads its output with silence: trim it so "the caller stopped" is the last voiced frame.
    lines = [_trim(pcm) for pcm in lines]
    # Paced: a word a chunk, as a model streams tokens; else three words a chunk, all at once.
    with StubLLM(
        replies=[AGENT_REPLY],
        words_per_chunk=1 if words_per_second else 3,
        chunk_seconds=1 / words_per_second if words_per_second else 0.0,
    ) as stub:
        brain = ChatCompletionsBrain(stub.base_url)
        caller = PacedCaller(lines)
        entries: list[dict[str, object]] = []
        started = time.monotonic()

        async def report(type_: str, data: dict[str, object]) -> None:
            print("event", type_, data)

        loop = TurnLoop(
            connection=caller,
            listener=Listener(caller, transcriber=transcriber),
            speaker=Speaker(caller, synth),
            transcript=TranscriptLog(entries, lambda: time.monotonic() - started),
            spec=AgentSpec(agent_speaks_first=False),
            brain=brain,
            report=report,
        )
        try:
            await loop.run()
        finally:
            await brain.aclose()
    pairs = zip(caller.speech_ended, caller.first_reply_frame, strict=False)
    return [reply - ended for ended, reply in pairs]


def _trim(pcm: bytes) -> bytes:
    from array import array

    samples = array("h", pcm)
    end = len(samples)
    while end > 0 and abs(samples[end - 1]) < 300:
        end -= 1
    return samples[:end].tobytes()


def report(name: str, latencies: list[float]) -> None:
    ms = [x * 1000 for x in latencies]
    print(
        f"{name}: {len(ms)} turns, p50 {percentile(ms, 0.5):.0f} ms, "
        f"p95 {percentile(ms, 0.95):.0f} ms, mean {statistics.fmean(ms):.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--parts", default="stt,audio,simulated")
    parser.add_argument(
        "--brain-ms",
        default="0,300",
        help="simulated part: the stub brain's times to first token, comma-separated",
    )
    parser.add_argument(
        "--words-per-second",
        type=float,
        default=0.0,
        help="audio part: the stub brain streams a word at a time at this pace (0: at once)",
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    synth = EspeakSynthesizer()
    # The worker's own live transcriber (engine/providers.py), whatever it is set up to do.
    transcriber = shared_transcriber(Settings(_env_file=None), "live")  # type: ignore[call-arg]
    if "stt" in parts:
        bench_stt(synth, transcriber)
    if "audio" in parts:
        report(
            "audio turn loop",
            asyncio.run(bench_audio(synth, transcriber, args.turns, args.words_per_second)),
        )
    if "simulated" in parts:
        sys.path.insert(0, str(ROOT / "bench"))
        from simulated_load import bench_simulated

        bench_simulated(tuple(float(ms) / 1000 for ms in args.brain_ms.split(",")))


if __name__ == "__main__":
    main()
