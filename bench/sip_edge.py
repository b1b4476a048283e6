"""Inbound call setup through the Kamailio edge against straight to a worker (docs/sip-edge.md).

    .venv/bin/python bench/sip_edge.py [--calls 300] [--rate 200] [--limit 40]

One run, on a fresh PostgreSQL database (CALLPLANE_BENCH_POSTGRES_URL, default the test server
at postgresql://postgres@127.0.0.1:5432/postgres), migrated, dropped at the end; one organization
with one phone number. SIPp (``tests/sipp/uac_call.xml``) places ``--calls`` calls to that
number, at most ``--limit`` at once, as fast as ``--rate`` allows; each call is answered, held
0 ms and hung up by the caller (INVITE, 100, 200, ACK, BYE, 200: the setup and the teardown).
Calls per second = successful calls / SIPp's wall time. Three legs, in this order:

1. straight to one ``callplane worker`` (CALLPLANE_TELEPHONY=sip);
2. through Kamailio (``callplane sip edge-config``) to that one worker;
3. through Kamailio to two workers.

Every call is a real inbound call of the engine: a row, its events, a conversation started and
ended, a recording stored.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.sipp_peer import free_udp_port, pcmu_file, render, tone_pcm  # noqa: E402

from callplane.kit.db import Database  # noqa: E402
from callplane.loader import load_document  # noqa: E402
from callplane.migrate import upgrade  # noqa: E402
from callplane.orgs.service import create_organization  # noqa: E402
from callplane.settings import Settings  # noqa: E402

ADMIN_URL = os.environ.get(
    "CALLPLANE_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
CALLPLANE = str(Path(sys.executable).with_name("callplane"))
NUMBER = "+14155550100"
#: Calls each worker takes before anything is measured.
WARM_UP = 40


async def _admin(statement: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(ADMIN_URL)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def _worker(url: str, tmp: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALLPLANE_")}
    env.update(
        CALLPLANE_DATABASE_URL=url,
        CALLPLANE_STORAGE_URL=f"file://{tmp / 'recordings'}",
        CALLPLANE_SIGNING_KEY="bench",
        CALLPLANE_LOG_LEVEL="error",
        CALLPLANE_TELEPHONY="sip",
        CALLPLANE_SIP_LISTEN=f"127.0.0.1:{port}",
        CALLPLANE_SIP_RTP_PORTS="20000-60000",
        CALLPLANE_MAX_CONCURRENT_CALLS="1000",
    )
    proc = subprocess.Popen(
        [CALLPLANE, "worker"], env=env, cwd=tmp, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert b"running" in line, line
    return proc


def _kamailio(tmp: Path, workers: list[int]) -> tuple[subprocess.Popen[bytes], int]:
    port = free_udp_port()
    args = [CALLPLANE, "sip", "edge-config", "--listen", f"127.0.0.1:{port}"]
    for worker in workers:
        args += ["--worker", f"127.0.0.1:{worker}"]
    config = tmp / f"kamailio-{port}.cfg"
    config.write_text(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    rundir = tmp / f"kamailio-{port}"
    rundir.mkdir()
    kamailio = shutil.which("kamailio") or "/usr/sbin/kamailio"
    proc = subprocess.Popen(
        [kamailio, "-DD", "-E", "-f", str(config), "-Y", str(rundir)],
        stdout=subprocess.DEVNULL,
        stderr=(tmp / f"kamailio-{port}.log").open("wb"),
    )
    time.sleep(1.5)  # its children up and the workers added
    assert proc.poll() is None, "kamailio exited"
    return proc, port


def _place(
    tmp: Path, target: int, args: argparse.Namespace, name: str, calls: int | None = None
) -> tuple[int, int, float]:
    """SIPp's calls to ``target``: (successful, failed, seconds)."""
    audio = pcmu_file(tone_pcm(500, 0.1), tmp, "caller.pcmu")
    scenario = render("uac_call.xml", tmp, f"{name}.xml", CALLER="+15557654321")
    scenario.write_text(
        scenario.read_text().replace("HOLD_MS", "0").replace("AUDIO_FILE", str(audio))
    )
    screen = tmp / f"{name}.screen.log"
    command = [shutil.which("sipp") or "sipp", f"127.0.0.1:{target}", "-sf", str(scenario)]
    command += ["-i", "127.0.0.1", "-mi", "127.0.0.1", "-p", str(free_udp_port())]
    command += ["-mp", str(free_udp_port(pair=True)), "-s", NUMBER, "-nostdin"]
    command += ["-m", str(calls or args.calls), "-r", str(args.rate), "-l", str(args.limit)]
    command += ["-timeout", "300s", "-trace_screen", "-screen_file", str(screen)]
    errors = tmp / f"{name}.errors.log"
    command += ["-trace_err", "-error_file", str(errors)]
    started = time.monotonic()
    subprocess.run(command, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    text = screen.read_text(errors="replace")
    if errors.exists():  # why calls failed, one line per kind
        kinds = Counter(
            re.sub(r"'[^']*'|\d+", "…", line.split(": ", 1)[-1])[:120]
            for line in errors.read_text(errors="replace").splitlines()
            if "Aborting" in line or "timeout" in line.lower()
        )
        for kind, count in kinds.most_common(3):
            print(f"  {name}: {count} × {kind}", file=sys.stderr)

    def cumulated(label: str) -> int:
        found = re.findall(rf"{label}\s*\|\s*\d+\s*\|\s*(\d+)", text)
        return int(found[-1]) if found else 0

    return cumulated("Successful call"), cumulated("Failed call"), seconds


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


async def _calls_made(url: str) -> int:
    """Inbound calls the workers created (SIPp counts a 404 as a successful scenario too)."""
    import asyncpg

    conn = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(False))
    try:
        return int(await conn.fetchval("SELECT count(*) FROM calls WHERE direction = 'inbound'"))
    finally:
        await conn.close()


async def run(url: str, args: argparse.Namespace, tmp: Path) -> None:
    db = Database(url, pool_size=1)
    try:
        await upgrade(db)
        async with db.session(write=True) as session:
            org = await create_organization(session, "bench")
            document = {"phone_numbers": [{"number": NUMBER}]}
            await load_document(session, Settings(database_url=url), org.id, document)
            await session.commit()
    finally:
        await db.dispose()

    ports = [free_udp_port(), free_udp_port()]
    first = _worker(url, tmp, ports[0])
    procs = [first]
    results: list[tuple[str, int, int, float]] = []

    async def leg(name: str, target: int, label: str) -> None:
        before = await _calls_made(url)
        ok, failed, seconds = _place(tmp, target, args, label)
        made = await _calls_made(url) - before
        if made != ok:
            print(f"  {name}: SIPp counted {ok} successful, the workers made {made}")
        results.append((name, min(ok, made), failed + max(0, ok - made), seconds))

    try:
        _place(tmp, ports[0], args, "warm1", calls=WARM_UP)  # imports, caches, connections
        edge, edge_port = _kamailio(tmp, ports[:1])
        procs.append(edge)
        for run in (1, 2):  # alternated, so that neither leg has the quieter minute
            await leg(f"straight to 1 worker (run {run})", ports[0], f"d{run}")
            await leg(f"through Kamailio, 1 worker (run {run})", edge_port, f"e{run}")
        procs.append(_worker(url, tmp, ports[1]))
        _place(tmp, ports[1], args, "warm2", calls=WARM_UP)
        edge2, edge2_port = _kamailio(tmp, ports)
        procs.append(edge2)
        await leg("through Kamailio, 2 workers", edge2_port, "edge2")
    finally:
        _stop(procs)

    print(f"\n{args.calls} calls per leg, at most {args.limit} at once, rate cap {args.rate}/s\n")
    print("| leg | successful | failed | seconds | calls/s |")
    print("|---|---:|---:|---:|---:|")
    for name, ok, failed, seconds in results:
        print(f"| {name} | {ok} | {failed} | {seconds:.1f} | {ok / seconds:.1f} |")
    direct = sum(r[1] for r in results[0:4:2]) / sum(r[3] for r in results[0:4:2])
    proxied = sum(r[1] for r in results[1:4:2]) / sum(r[3] for r in results[1:4:2])
    print(f"\none worker: {direct:.1f} calls/s straight, {proxied:.1f} through the proxy")
    print(f"the proxy's cost on one worker: {1 - proxied / direct:.1%} of the calls per second")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--limit", type=int, default=40)
    args = parser.parse_args()
    database = f"callplane_bench_{uuid.uuid4().hex[:10]}"
    await _admin(f'CREATE DATABASE "{database}"')
    url = make_url(ADMIN_URL).set(database=database).render_as_string(False)
    try:
        with tempfile.TemporaryDirectory(prefix="callplane-bench-sip-") as tmp:
            await run(url, args, Path(tmp))
    finally:
        await _admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


if __name__ == "__main__":
    asyncio.run(main())
