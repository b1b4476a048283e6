"""One SIP address, many workers (docs/sip-edge.md): Kamailio from ``callplane sip edge-config`` in
front of real ``callplane worker`` processes on PostgreSQL, SIPp as the caller."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from callplane.models.calls import Call
from tests.conftest import BACKEND, AppFactory, client_for
from tests.engine_support import events_of
from tests.factories import OrgHandle, load, make_org
from tests.kamailio_edge import check_config, edge_config, requires_kamailio, running_edge
from tests.sipp_peer import (
    Sipp,
    free_udp_port,
    pcmu_file,
    render,
    requires_sipp,
    start_sipp,
    tone_pcm,
)
from tests.worker_process import CALLPLANE, WorkerProcess

NUMBER = "+14155550100"


@requires_kamailio
@pytest.mark.no_audio  # Kamailio checks the file and exits
def test_edge_config_is_a_complete_config_kamailio_accepts(tmp_path: Path) -> None:
    workers = [("127.0.0.1", 5070), ("127.0.0.1", 5072), ("worker-3.internal", 5060)]
    path = edge_config(("127.0.0.1", free_udp_port()), workers, tmp_path / "kamailio.cfg")
    checked = check_config(path)
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert "config file ok" in checked.stdout + checked.stderr
    config = path.read_text()
    for host, port in workers:
        assert f'"sip:{host}:{port}"' in config
    assert 'loadmodule "dispatcher.so"' in config
    assert 'ds_select_dst("1", "4")' in config  # round-robin
    assert 'modparam("dispatcher", "ds_ping_interval", 2)' in config
    assert 't_check_status("503|408")' in config and "record_route();" in config
    shipped = Path(__file__).parents[1] / "deploy" / "kamailio" / "kamailio.cfg"
    assert check_config(shipped).returncode == 0


@pytest.mark.no_audio
@pytest.mark.parametrize(
    "args",
    [
        ["--listen", "127.0.0.1:5060"],  # no worker
        ["--listen", "127.0.0.1", "--worker", "127.0.0.1:5070"],  # no port
        ["--listen", "127.0.0.1:99999", "--worker", "127.0.0.1:5070"],
        ["--listen", "127.0.0.1:5060", "--worker", 'evil");exit;#:5070'],
    ],
)
def test_edge_config_refuses_bad_addresses_with_one_line(args: list[str]) -> None:
    done = subprocess.run(
        [CALLPLANE, "sip", "edge-config", *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and done.stdout == ""
    assert "Traceback" not in done.stderr


# -- the edge in front of two workers ------------------------------------------------------


def _caller(directory: Path, name: str, hold_ms: int) -> Path:
    audio = pcmu_file(tone_pcm(500, 0.4), directory, "caller.pcmu")
    scenario = render("uac_call.xml", directory, name, CALLER="+15557654321", AUDIO_FILE=str(audio))
    scenario.write_text(scenario.read_text().replace("HOLD_MS", str(hold_ms)))
    return scenario


async def _call_in(
    edge: tuple[str, int], directory: Path, name: str, calls: int, hold_ms: int = 300
) -> Sipp:
    return await start_sipp(
        _caller(directory, name, hold_ms),
        remote=edge,
        service=NUMBER,
        calls=calls,
        rate=10,
        timeout_seconds=60,
    )


async def _calls(app: Any, org: OrgHandle) -> list[tuple[str, str | None, str]]:
    """(id, worker pid, status) of every call, oldest first."""
    async with app.state.runtime.db.session(write=False) as session:
        rows = await session.execute(
            select(Call.id, Call.worker_id, Call.status)
            .where(Call.organization_id == org.id)
            .order_by(Call.created_at)
        )
        return [(str(i), w.split(":")[-2] if w else None, s) for i, w, s in rows]


def calls_by(calls: list[tuple[str, str | None, str]]) -> list[tuple[str | None, str]]:
    return [(pid, status) for _, pid, status in calls]


async def _until(app: Any, org: OrgHandle, check: Any, within: float = 30) -> list[Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        calls = await _calls(app, org)
        if check(calls):
            return calls
        assert loop.time() < deadline, (
            f"never reached: {len(calls)} calls, {Counter(calls_by(calls))}"
        )
        await asyncio.sleep(0.1)


async def _worker(database_url: str, directory: Path, port: int, rtp: str) -> WorkerProcess:
    # Workers on one machine each have their own RTP range (deploy/kamailio/README.md).
    return await WorkerProcess.start(
        database_url,
        directory,
        telephony="sip",
        sip_listen=f"127.0.0.1:{port}",
        sip_rtp_ports=rtp,
        worker_lease_seconds=3,
        worker_poll_seconds=0.1,
    )


def _tail(log: Path, offset: int) -> bytes:
    return log.read_bytes()[offset:]


async def _logged(log: Path, offset: int, line: str, within: float = 20) -> None:
    """Until the edge logs ``line`` (past ``offset``): what its probes found."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while line.encode() not in _tail(log, offset):
        assert loop.time() < deadline, f"the edge never logged {line!r}"
        await asyncio.sleep(0.1)


def _pid(worker: WorkerProcess) -> str:
    return str(worker.process.pid)


@requires_sipp
@requires_kamailio
@pytest.mark.skipif(
    BACKEND != "postgresql",
    reason="many worker processes share one database: PostgreSQL only (docs/engine-core.md)",
)
@pytest.mark.postgres
@pytest.mark.slow  # three worker processes and Kamailio: about a minute; the edge end to end
async def test_kamailio_spreads_calls_and_survives_a_drain_and_a_kill(
    make_app: AppFactory, database_url: str, tmp_path: Path
) -> None:
    app = await make_app(worker="off")
    org = await make_org(app)
    await load(app, org, {"phone_numbers": [{"number": NUMBER}]})
    ports = [free_udp_port(), free_udp_port()]
    ranges = ["20000-29999", "30000-39999", "40000-49999"]
    workers = [
        await _worker(database_url, tmp_path, p, r) for p, r in zip(ports, ranges, strict=False)
    ]
    try:
        async with running_edge([("127.0.0.1", p) for p in ports], tmp_path) as edge:
            # 1. Twenty calls: all answered, both workers take some.
            sipp = await _call_in(edge.address, tmp_path, "twenty.xml", 20)
            await sipp.finish_ok(within=60)
            calls = await _until(
                app, org, lambda c: len(c) == 20 and all(s == "completed" for *_, s in c)
            )
            by_worker = Counter(pid for _, pid, _ in calls)
            assert set(by_worker) == {_pid(w) for w in workers}, by_worker

            # 2. SIGTERM the worker holding a call: the next calls all go to the other one;
            # the drained worker exits 0 once its call has ended normally.
            long_call = await _call_in(edge.address, tmp_path, "long.xml", 1, hold_ms=3000)
            calls = await _until(app, org, lambda c: len(c) == 21 and c[-1][2] == "in_progress")
            long_id, holder_pid, _ = calls[-1]
            drained = next(w for w in workers if _pid(w) == holder_pid)
            survivor = next(w for w in workers if w is not drained)
            drained.process.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.3)  # the signal is handled; the edge learns it from a 503
            sipp = await _call_in(edge.address, tmp_path, "after_drain.xml", 6)
            await sipp.finish_ok(within=60)
            await long_call.finish_ok(within=30)
            assert await asyncio.wait_for(drained.process.wait(), 30) == 0  # one SIGTERM only
            calls = await _until(
                app, org, lambda c: len(c) == 27 and all(s == "completed" for *_, s in c)
            )
            assert [pid for _, pid, _ in calls[21:]] == [_pid(survivor)] * 6
            assert dict((i, s) for i, _, s in calls)[long_id] == "completed"

            # 3. A new worker on the drained one's address: the edge's probes bring it back.
            seen = len(edge.log.read_bytes())
            port = ports[workers.index(drained)]
            replacement = await _worker(database_url, tmp_path, port, ranges[2])
            workers.append(replacement)
            await _logged(edge.log, seen, f"edge: worker sip:127.0.0.1:{port} is up")
            # Two long calls (normally one on each); kill -9 the worker holding the first.
            long_calls = await _call_in(edge.address, tmp_path, "kill.xml", 2, hold_ms=20000)
            calls = await _until(
                app, org, lambda c: len(c) == 29 and all(s == "in_progress" for *_, s in c[27:])
            )
            alive = [survivor, replacement]
            killed = next(w for w in alive if _pid(w) == calls[27][1])
            survivor = next(w for w in alive if w is not killed)
            await killed.kill()
            killed_calls = [i for i, pid, _ in calls[27:] if pid == _pid(killed)]
            await asyncio.sleep(5)
            sipp = await _call_in(edge.address, tmp_path, "after_kill.xml", 6)
            await sipp.finish_ok(within=60)
            await long_calls.stop()
            calls = await _until(
                app,
                org,
                lambda c: all(dict((i, s) for i, _, s in c)[k] == "failed" for k in killed_calls),
            )
            assert len(calls) == 35  # every INVITE made exactly one call: nothing twice
            assert [pid for _, pid, _ in calls[29:]] == [_pid(survivor)] * 6
            async with client_for(app) as client:
                events = await events_of(client, org, killed_calls[0])
            ended = [e["data"] for e in events if e["type"] == "call.ended"]
            assert ended == [
                {**ended[0], "status": "failed", "reason": "the worker holding the call stopped"}
            ]
    finally:
        for worker in workers:
            await worker.cleanup()
