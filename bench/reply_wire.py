"""Reply latency on the wire: a real inbound SIP call, measured from a packet capture.

    .venv/bin/python bench/reply_wire.py [--turns 8] [--gap 7] [--voice piper:en_US-joe-medium]

Needs sipp, tcpdump (and the right to capture on the loopback) and the shared harness
``rtp_latency.py`` (``$CALLPLANE_SHARED_BENCH``, default ``../shared/bench``).

A worker (the app with its embedded worker, CALLPLANE_TELEPHONY=sip, a fresh SQLite database in a
temp dir) answers a phone number; its brain is the stub OpenAI-compatible server of the tests
(streaming, no think time); voice and endpointing are the worker's defaults unless asked.
SIPp (``tests/sipp/uac_call.xml``) calls that number and plays, as RTP in real time, the caller
lines of ``bench/conversation.py`` (espeak-ng at 8 kHz, PCMU) with ``--gap`` seconds of silence
after each, so that the agent's reply is over before the caller speaks again. ``tcpdump``
captures the call's UDP on ``lo``; ``rtp_latency.py`` then measures, for each caller line, its
last voiced packet to the agent's first voiced packet after it: what the caller hears, with the
RTP pacing, the jitter of the socket and the codec included. Prints its lines and p50 / p95.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from conversation import AGENT_REPLY, CALLER_LINES, _trim, percentile  # noqa: E402
from tests.conftest import _migrate, client_for, make_settings  # noqa: E402
from tests.factories import load, make_org  # noqa: E402
from tests.llm_stub import StubLLM  # noqa: E402
from tests.sipp_peer import free_udp_port, pcmu_file, render, start_sipp  # noqa: E402

from callplane.app import create_app  # noqa: E402
from callplane.observability import turns  # noqa: E402
from callplane.speech.synthesis import EspeakSynthesizer  # noqa: E402

NUMBER = "+14155550100"
PHASES = ("end_of_turn_ms", "recognition_ms", "first_token_ms", "first_audio_ms", "total_ms")


def _shared_bench() -> Path:
    return Path(os.environ.get("CALLPLANE_SHARED_BENCH", ROOT.parent / "shared" / "bench"))


def caller_audio(turns: int, gap: float, lead: float) -> bytes:
    """The caller's side of the call: ``lead`` s of silence (the agent's greeting), then each
    line followed by ``gap`` s of silence (16-bit PCM at 8 kHz)."""
    espeak = EspeakSynthesizer()
    lines = [_trim(espeak.synthesize(line, 8000)) for line in CALLER_LINES]
    audio = bytearray(b"\0\0" * int(lead * 8000))
    for turn in range(turns):
        audio += lines[turn % len(lines)]
        audio += b"\0\0" * int(gap * 8000)
    return bytes(audio)


def _media_port(pid: int) -> int:
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return int(args[args.index(b"-mp") + 1])


async def run(args: argparse.Namespace, work: Path) -> Path:
    database = f"sqlite:///{work / 'bench.db'}"
    await _migrate(database)
    audio = caller_audio(args.turns, args.gap, args.lead)
    seconds = len(audio) / 16000
    pcmu = pcmu_file(audio, work, "caller.pcmu")
    capture = work / "call.pcap"
    with StubLLM(replies=[AGENT_REPLY]) as stub:
        settings = {
            "worker": "embedded",
            "telephony": "sip",
            "sip_listen": f"127.0.0.1:{free_udp_port()}",
            "sip_rtp_ports": "20000-60000",
            "worker_poll_seconds": 0.05,
            "storage_url": f"file://{work / 'recordings'}",
            "llm_base_url": stub.base_url,
            "voice_engine": args.voice,
        }
        if args.endpointing:
            settings["endpointing"] = args.endpointing
        app = create_app(make_settings(database, **settings))
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        try:
            org = await make_org(app)
            await load(app, org, {"phone_numbers": [{"number": NUMBER}]})
            listen = app.state.runtime.settings.sip_listen.rsplit(":", 1)
            scenario = render(
                "uac_call.xml", work, "call.xml", CALLER="+15557654321", AUDIO_FILE=str(pcmu)
            )
            hold_ms = int((seconds + 3) * 1000)
            scenario.write_text(scenario.read_text().replace("HOLD_MS", str(hold_ms)))
            tcpdump = await asyncio.create_subprocess_exec(
                *("tcpdump", "-i", "lo", "-U", "-n", "-w", str(capture)),
                "udp portrange 1024-65535",
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            await asyncio.sleep(1.0)  # tcpdump opens its capture before the call begins
            try:
                sipp = await start_sipp(
                    scenario,
                    remote=(listen[0], int(listen[1])),
                    service=NUMBER,
                    timeout_seconds=int(seconds) + 60,
                )
                args.media_port = _media_port(sipp.process.pid)
                print(
                    f"call of {seconds:.0f} s, {args.turns} caller lines; SIPp media port "
                    f"{args.media_port}",
                    flush=True,
                )
                await sipp.finish_ok(within=seconds + 60)
                await asyncio.sleep(1.0)
            finally:
                tcpdump.send_signal(signal.SIGINT)
                await asyncio.wait_for(tcpdump.wait(), 10)
            async with client_for(app) as client:
                listed = await client.get("/v1/calls?direction=inbound", headers=org.headers)
                for call in listed.json()["calls"]:
                    print(f"call {call['id']}: {call['status']}")
                    found = await client.get(f"/v1/calls/{call['id']}/events", headers=org.headers)
                    for event in found.json()["events"]:
                        if event["type"] == turns.EVENT_TYPE:
                            phases = {k: event["data"].get(k) for k in PHASES}
                            print(f"  turn in the worker (ms): {phases}")
        finally:
            await lifespan.__aexit__(None, None, None)
    return capture


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--gap", type=float, default=7.0, help="silence after each caller line")
    parser.add_argument("--lead", type=float, default=6.0, help="silence before the first line")
    parser.add_argument("--voice", default="piper:en_US-joe-medium")
    parser.add_argument(
        "--endpointing", default="", help="model, smart or silence (default: the worker's)"
    )
    parser.add_argument("--keep", help="copy the capture here")
    args = parser.parse_args()
    harness = _shared_bench() / "rtp_latency.py"
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        capture = asyncio.run(run(args, Path(tmp)))
        if args.keep:
            Path(args.keep).write_bytes(capture.read_bytes())
        out = subprocess.run(  # noqa: S603
            [sys.executable, str(harness), str(capture), str(args.media_port)],
            capture_output=True,
            text=True,
            check=False,
        )
    print(out.stdout + out.stderr, end="")
    latencies = [float(match.group(1)) for match in re.finditer(r"reply +(\d+) ms", out.stdout)]
    if latencies:
        print(
            f"on the wire: p50 {percentile(latencies, 0.5):.0f} ms, p95 "
            f"{percentile(latencies, 0.95):.0f} ms, mean {statistics.fmean(latencies):.0f} ms "
            f"over {len(latencies)} replies (load {os.getloadavg()[0]:.1f})"
        )


if __name__ == "__main__":
    main()
