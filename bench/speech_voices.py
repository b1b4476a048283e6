"""Benchmark: Piper vs espeak-ng, model vs smart vs silence endpointing, side by side
(docs/voices.md).

    .venv/bin/python bench/speech_voices.py [--parts first,reply,capacity,languages] [--turns 8]

first     time to the first sentence's audio at 8 kHz: Piper's joe voice (its warm process,
          the worker's setting) and espeak-ng (a process per line), including resampling.
reply     reply latency of the whole audio turn loop on ``bench/conversation.py``'s caller
          lines (real time, VAD, end of turn, Whisper tiny.en, the stub brain with no think
          time, the first sentence synthesised), for each of model / smart / silence x Piper /
          espeak-ng. Latency = from the caller's last voiced frame to the reply's first frame.
          ``--modes`` picks the endpointing modes, ``--speculative on,off`` runs each with and
          without speculative replies (the brain asked on the pause's words), interleaved.
capacity  N such conversations at once on one worker process (one Whisper model, one Piper
          process shared): reply latency as N grows (--calls 1,2,4,8), with the mean of each
          phase of a turn (end of turn, recognition, brain's first token, first audio), the
          CPU time of a turn and the recognitions it took; the calls either start spread over
          a turn's cycle (``staggered``) or all say the same lines at once (``together``);
          ``--guess-ms 120,60`` compares when endpointing starts its guess; model endpointing
          (the default), as a worker runs it.
languages reply latency of a Spanish call (the multilingual Whisper base hearing espeak-ng's
          Spanish, the agent answering with espeak-ng's Spanish voice) beside an English one
          (tiny.en, espeak-ng en-us), smart endpointing, turns interleaved
          (docs/languages.md).

Prints tables for docs/voices.md.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import resource
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from conversation import AGENT_REPLY, CALLER_LINES, PacedCaller, _trim, percentile  # noqa: E402
from tests.llm_stub import StubLLM  # noqa: E402

from callplane.brain import ChatCompletionsBrain  # noqa: E402
from callplane.engine.agent import AgentSpec  # noqa: E402
from callplane.engine.conversation.endpointing import Endpointing  # noqa: E402
from callplane.engine.conversation.language import CallLanguage  # noqa: E402
from callplane.engine.conversation.listening import Listener  # noqa: E402
from callplane.engine.conversation.speaking import Speaker  # noqa: E402
from callplane.engine.conversation.turn_loop import TranscriptLog, TurnLoop  # noqa: E402
from callplane.observability import turns  # noqa: E402
from callplane.settings import Settings  # noqa: E402
from callplane.speech.base import Segment, Synthesizer, Transcriber  # noqa: E402
from callplane.speech.engines import Synthesizers  # noqa: E402
from callplane.speech.piper import PiperPool, PiperSynthesizer  # noqa: E402
from callplane.speech.synthesis import EspeakSynthesizer  # noqa: E402
from callplane.speech.transcriber import WhisperTranscriber, shared_transcriber  # noqa: E402

PIPER = "piper:en_US-joe-medium"
#: Turns a text guess waits long for (600 ms after a number): a speculative reply's case.
NUMBER_LINES = [
    "My phone number is four one five, five five five, zero one three two.",
    "The booking reference is seven seven two four.",
    "We will be six.",
    "My date of birth is the third of March, nineteen eighty five.",
]
FIRST_SENTENCES = [
    "Of course, I can do that for you.",
    "Thanks for calling Acme Dental.",
    "Friday at nine is free.",
    "Let me check that for you.",
]


def ms(values: list[float]) -> str:
    out = [v * 1000 for v in values]
    p50, p95, mean = percentile(out, 0.5), percentile(out, 0.95), statistics.fmean(out)
    return f"p50 {p50:5.0f}  p95 {p95:5.0f}  mean {mean:5.0f}"


def _cpu_seconds(synth: Synthesizer) -> float:
    """CPU time of the synthesis so far: Piper's process, or this process's children."""
    if isinstance(synth, PiperSynthesizer | PiperPool):
        ticks = 0
        for pid in synth.pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench_first(voices: dict[str, Synthesizer], repeats: int) -> None:
    """Wall time, and CPU time (which a busy machine does not inflate: on an idle one the wall
    time of a sentence is about its CPU time over the threads it can use)."""
    print("first sentence at 8 kHz (ms), wall and CPU:")
    for name, synth in voices.items():
        times = []
        cpu = _cpu_seconds(synth)
        for _ in range(repeats):
            for sentence in FIRST_SENTENCES:
                started = time.perf_counter()
                synth.synthesize(sentence, 8000)
                times.append(time.perf_counter() - started)
        cpu_ms = (_cpu_seconds(synth) - cpu) / len(times) * 1000
        print(f"  {name:24} {ms(times)}  CPU mean {cpu_ms:4.0f}")


async def conversation(
    lines: list[bytes],
    transcriber: Transcriber,
    synth: Synthesizer,
    endpointing: Endpointing,
    base_url: str,
    phases: list[dict[str, object]] | None = None,
    *,
    delay: float = 0.0,
    replies_at: list[float] | None = None,
    spec: AgentSpec | None = None,
    speculative: bool = True,
) -> list[float]:
    """Reply latencies (s) of one conversation; ``replies_at`` gets when each reply began."""
    await asyncio.sleep(delay)
    caller = PacedCaller(lines)
    brain = ChatCompletionsBrain(base_url)
    entries: list[dict[str, object]] = []
    started = time.monotonic()

    async def report(type_: str, data: dict[str, object]) -> None:
        if phases is not None and type_ == turns.EVENT_TYPE:
            phases.append(data)

    loop = TurnLoop(
        connection=caller,
        listener=Listener(
            caller, transcriber=transcriber, endpointing=endpointing, tell_guesses=speculative
        ),
        speaker=Speaker(caller, synth),
        transcript=TranscriptLog(entries, lambda: time.monotonic() - started),
        spec=spec or AgentSpec(agent_speaks_first=False),
        brain=brain,
        report=report,
    )
    try:
        await loop.run()
    finally:
        await brain.aclose()
    if replies_at is not None:
        replies_at += caller.first_reply_frame
    return [
        reply - ended
        for ended, reply in zip(caller.speech_ended, caller.first_reply_frame, strict=False)
    ]


async def bench_reply(
    voices: dict[str, Synthesizer],
    transcriber: WhisperTranscriber,
    turns: int,
    modes: Sequence[str] = ("model", "smart", "silence"),
    speculation: Sequence[bool] = (True,),
    said: Sequence[str] = CALLER_LINES,
) -> None:
    """The combinations take turns, two caller lines at a time, so that a machine whose load
    drifts during the run weighs on each of them alike."""
    espeak = EspeakSynthesizer()
    lines = [_trim(espeak.synthesize(line, 8000)) for line in said]
    combos = [(m, n, s) for m in modes for n in voices for s in speculation]
    latencies: dict[tuple[str, str, bool], list[float]] = {combo: [] for combo in combos}
    print(f"reply latency, {turns} turns each, interleaved (ms):")
    with StubLLM(replies=[AGENT_REPLY]) as stub:
        for start in range(0, turns, 2):
            pair = [lines[(start + k) % len(lines)] for k in range(min(2, turns - start))]
            for mode, name, speculative in combos:
                endpointing = Endpointing(mode=mode)  # type: ignore[arg-type]
                latencies[(mode, name, speculative)] += await conversation(
                    pair,
                    transcriber,
                    voices[name],
                    endpointing,
                    stub.base_url,
                    speculative=speculative,
                )
    kept, discarded = _speculations()
    for mode, name, speculative in combos:
        guessing = "speculative" if speculative else "after turn"
        print(f"  {mode:8} {name:24} {guessing:12} {ms(latencies[(mode, name, speculative)])}")
    if any(speculation):
        print(f"  speculative replies: {kept:.0f} kept, {discarded:.0f} discarded")


def _speculations() -> tuple[float, float]:
    from prometheus_client import REGISTRY

    name = "callplane_speculative_replies_total"
    return (
        REGISTRY.get_sample_value(name, {"outcome": "kept"}) or 0.0,
        REGISTRY.get_sample_value(name, {"outcome": "discarded"}) or 0.0,
    )


SPANISH_LINES = [
    "Hola, quisiera cambiar mi cita para el viernes por la mañana.",
    "A las nueve estaría muy bien, gracias.",
    "¿Me puede enviar también un recordatorio por mensaje?",
    "No, eso es todo por hoy.",
]
SPANISH_REPLY = "Claro, puedo hacerlo. ¿Hay algo más en lo que pueda ayudarle?"


async def bench_languages(turns: int) -> None:
    """English on tiny.en beside Spanish on base, two caller lines at a time in turn, each call
    set up as the worker sets it up (``conversation/language.py``)."""
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    calls = {}
    for language, voice, said, reply in (
        ("en", "en-us", CALLER_LINES, AGENT_REPLY),
        ("es", "es", SPANISH_LINES, SPANISH_REPLY),
    ):
        spec = AgentSpec(agent_speaks_first=False, language=language)
        synth = EspeakSynthesizer(voice=voice)
        lines = [_trim(synth.synthesize(line, 8000)) for line in said]
        hearing = CallLanguage(settings, spec, call_overrides=set()).transcriber()
        # Loaded before the clock runs, as a worker loads it on its first such call.
        hearing.transcribe(lines[0], 8000)
        calls[language] = (spec, synth, lines, hearing, reply)
    latencies: dict[str, list[float]] = {language: [] for language in calls}
    print(f"reply latency by language, {turns} turns each, interleaved (ms):")
    for start in range(0, turns, 2):
        for language, (spec, synth, lines, hearing, reply) in calls.items():
            pair = [lines[(start + k) % len(lines)] for k in range(min(2, turns - start))]
            with StubLLM(replies=[reply]) as stub:
                latencies[language] += await conversation(
                    pair, hearing, synth, Endpointing(mode="smart"), stub.base_url, spec=spec
                )
    names = {"en": "English, tiny.en", "es": "Spanish, base"}
    for language, values in latencies.items():
        print(f"  {names[language]:24} {ms(values)}")


async def bench_capacity(
    synth: Synthesizer,
    name: str,
    transcriber: Transcriber,
    turns: int,
    sizes: list[int],
    arrivals: list[str],
    guesses: Sequence[int | None] = (None,),
    caller_voice: str = "en-us",
    caller_lines: Sequence[str] = CALLER_LINES,
) -> None:
    """Each size's reply latency, the mean of each phase of a turn (``observability.turns``:
    end of turn, recognition, brain's first token, first audio), to show which one grows, and
    the CPU time a turn costs (this process and Piper's).

    ``together``: the N callers say the same lines at the same moments, every turn of every
    call ending at once (a worst case no real worker sees: independent callers do not
    synchronise). ``staggered``: the N calls start spread over one turn's cycle (a caller's line
    and the 2 s they listen), as independent calls overlap; only replies made while all N
    calls were up are counted, so the ramp up and down, with fewer calls, does not flatter it."""
    espeak = EspeakSynthesizer(voice=caller_voice)
    lines = [
        _trim(espeak.synthesize(caller_lines[n % len(caller_lines)], 8000)) for n in range(turns)
    ]
    line_seconds = statistics.fmean(len(pcm) / 16000 for pcm in lines)
    cycle = line_seconds + 2.5
    print(f"capacity, model endpointing, {name}, {turns} turns a call (reply latency, ms):")
    print(
        f"  {'':24} {'':34}  {'phase means: end  recog  token  audio':>38}"
        "  CPU/turn (own + voice)  recognitions/turn"
    )
    with StubLLM(replies=[AGENT_REPLY]) as stub:
        for arrival, calls, guess_ms in itertools.product(arrivals, sizes, guesses):
            # The worker's default: the end-of-turn model with the text guard.
            endpointing = Endpointing(mode="model", guess_ms=guess_ms or Endpointing.guess_ms)
            phases: list[dict[str, object]] = []
            starts = [0.0 if arrival == "together" else k * cycle / calls for k in range(calls)]
            replies_at: list[list[float]] = [[] for _ in range(calls)]
            counting = CountingTranscriber(transcriber)
            own, voice = _process_cpu(), _cpu_seconds(synth)
            began = time.monotonic()
            results = await asyncio.gather(
                *(
                    conversation(
                        lines,
                        counting,
                        synth,
                        endpointing,
                        stub.base_url,
                        phases,
                        delay=starts[k],
                        replies_at=replies_at[k],
                    )
                    for k in range(calls)
                )
            )
            own, voice = _process_cpu() - own, _cpu_seconds(synth) - voice
            # While all N were up: after the last call's first reply, before the first
            # call's last one.
            full_from = began + starts[-1] + line_seconds
            full_until = min(r[-1] for r in replies_at if r)
            every = [
                latency
                for result, at in zip(results, replies_at, strict=True)
                for latency, when in zip(result, at, strict=False)
                if full_from <= when <= full_until
            ] or [x for r in results for x in r]
            means = [
                statistics.fmean(float(p[f"{phase}_ms"]) for p in phases)  # type: ignore[arg-type]
                for phase in ("end_of_turn", "recognition", "first_token", "first_audio")
            ]
            verdict = "ok" if percentile(every, 0.95) < 1.2 else "over 1.2 s"
            cells = "  ".join(f"{m:5.0f}" for m in means)
            turns_made = max(1, len(phases))
            per_turn = f"{own / turns_made * 1000:4.0f} + {voice / turns_made * 1000:3.0f}"
            per_turn += f"  {counting.count / turns_made:.1f}"
            guessing = f" guess {endpointing.guess_ms} ms" if guesses != (None,) else ""
            print(
                f"  {arrival:9} {calls:2} at once{guessing}: {ms(every)}  {cells}  {per_turn} ms"
                f"  ({len(every)} replies, load {os.getloadavg()[0]:.1f})  {verdict}"
            )


class CountingTranscriber(Transcriber):
    """Counts recognitions: a turn's own, and the pauses' guesses that the caller talked over."""

    def __init__(self, inner: Transcriber) -> None:
        self.inner = inner
        self.count = 0

    def transcribe(
        self,
        pcm: bytes,
        sample_rate: int,
        *,
        hints: Sequence[str] = (),
        abandoned: threading.Event | None = None,
    ) -> list[Segment]:
        self.count += 1
        return self.inner.transcribe(pcm, sample_rate, hints=hints, abandoned=abandoned)


def _process_cpu() -> float:
    times = os.times()
    return times.user + times.system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--parts", default="first,reply,capacity")
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--modes", default="model,smart,silence", help="reply part: endpointing modes"
    )
    parser.add_argument(
        "--speculative",
        default="on",
        help="reply part: speculative replies on, off, or on,off side by side",
    )
    parser.add_argument(
        "--lines",
        default="calls",
        help="reply part: calls (the caller's usual lines) or numbers (turns ending in a number)",
    )
    parser.add_argument("--voices", default=f"{PIPER},espeak-ng:en-us", help="reply part")
    parser.add_argument(
        "--calls", default="1,2,4,8", help="capacity part: conversations at once, comma-separated"
    )
    parser.add_argument(
        "--arrivals",
        default="staggered,together",
        help="capacity part: calls spread over a turn's cycle, and/or all in step",
    )
    parser.add_argument(
        "--guess-ms",
        default="",
        help="capacity part: smart endpointing's guess after this much silence, comma-separated"
        " values taking turns (default: the worker's)",
    )
    parser.add_argument(
        "--capacity-language",
        default="en",
        help="capacity part: es runs Spanish calls (Whisper base, espeak-ng's Spanish voice)",
    )
    parser.add_argument(
        "--piper-processes", type=int, default=1, help="CALLPLANE_PIPER_PROCESSES for the voice"
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    registry = Synthesizers(
        Settings(  # type: ignore[call-arg]
            _env_file=None, voice_engine="espeak-ng:en-us", piper_processes=args.piper_processes
        )
    )
    voices = {PIPER: registry.get(PIPER), "espeak-ng:en-us": registry.get("espeak-ng:en-us")}
    # The worker's own live transcriber (engine/providers.py), whatever it is set up to do.
    transcriber = shared_transcriber(Settings(_env_file=None), "live")  # type: ignore[call-arg]
    try:
        if "first" in parts:
            bench_first(voices, args.repeats)
        if "reply" in parts:
            asyncio.run(
                bench_reply(
                    {name: voices[name] for name in args.voices.split(",")},
                    transcriber,
                    args.turns,
                    args.modes.split(","),
                    [flag == "on" for flag in args.speculative.split(",")],
                    NUMBER_LINES if args.lines == "numbers" else CALLER_LINES,
                )
            )
        if "languages" in parts:
            asyncio.run(bench_languages(args.turns))
        if "capacity" in parts:
            spanish = args.capacity_language == "es"
            hearing: Transcriber = transcriber
            if spanish:
                spec = AgentSpec(agent_speaks_first=False, language="es")
                settings = Settings(_env_file=None)  # type: ignore[call-arg]
                hearing = CallLanguage(settings, spec, call_overrides=set()).transcriber()
            asyncio.run(
                bench_capacity(
                    EspeakSynthesizer(voice="es") if spanish else voices[PIPER],
                    "espeak-ng:es, Whisper base" if spanish else PIPER,
                    hearing,
                    args.turns,
                    [int(n) for n in args.calls.split(",")],
                    args.arrivals.split(","),
                    [int(g) for g in args.guess_ms.split(",")] if args.guess_ms else (None,),
                    caller_voice="es" if spanish else "en-us",
                    caller_lines=SPANISH_LINES if spanish else CALLER_LINES,
                )
            )
    finally:
        registry.close()


if __name__ == "__main__":
    main()
