"""Kamailio (Debian's ``kamailio``) from ``callplane sip edge-config``, in the foreground on a
loopback port chosen at test time."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.sipp_peer import free_udp_port
from tests.worker_process import CALLPLANE

KAMAILIO = shutil.which("kamailio") or (
    "/usr/sbin/kamailio" if os.path.exists("/usr/sbin/kamailio") else None
)
if KAMAILIO is None and os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    raise RuntimeError("Kamailio is required under CI: scripts/apt-packages.txt lists kamailio")
requires_kamailio = pytest.mark.skipif(KAMAILIO is None, reason="kamailio not installed")


def edge_config(listen: tuple[str, int], workers: list[tuple[str, int]], path: Path) -> Path:
    """``callplane sip edge-config`` run for real, its output written to ``path``."""
    args = [CALLPLANE, "sip", "edge-config", "--listen", f"{listen[0]}:{listen[1]}"]
    for host, port in workers:
        args += ["--worker", f"{host}:{port}"]
    done = subprocess.run(args, capture_output=True, text=True, check=True, timeout=60)
    path.write_text(done.stdout)
    return path


def check_config(path: Path) -> subprocess.CompletedProcess[str]:
    assert KAMAILIO is not None
    return subprocess.run(
        [KAMAILIO, "-c", "-f", str(path)], capture_output=True, text=True, timeout=60
    )


@dataclass
class Edge:
    address: tuple[str, int]
    process: asyncio.subprocess.Process
    log: Path


@contextlib.asynccontextmanager
async def running_edge(workers: list[tuple[str, int]], directory: Path) -> AsyncIterator[Edge]:
    """Kamailio in front of ``workers``: foreground (-DD), logs to a file, its own run dir."""
    assert KAMAILIO is not None
    listen = ("127.0.0.1", free_udp_port())
    config = edge_config(listen, workers, directory / "kamailio.cfg")
    rundir = directory / "kamailio-run"
    rundir.mkdir(exist_ok=True)
    log = directory / "kamailio.log"
    with log.open("wb") as output:
        process = await asyncio.create_subprocess_exec(
            KAMAILIO, "-DD", "-E", "-f", str(config), "-Y", str(rundir),
            stdin=subprocess.DEVNULL, stdout=output, stderr=output,
        )  # fmt: skip
    edge = Edge(listen, process, log)
    try:
        await _wait_answering(edge)
        yield edge
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


async def _wait_answering(edge: Edge, within: float = 20) -> None:
    """Until the edge answers an OPTIONS addressed to itself."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.setblocking(False)
        port = sock.getsockname()[1]
        while loop.time() < deadline:
            if edge.process.returncode is not None:
                raise AssertionError(f"kamailio exited: {edge.log.read_text()[-3000:]}")
            tag = uuid.uuid4().hex[:8]
            probe = (
                f"OPTIONS sip:{edge.address[0]}:{edge.address[1]} SIP/2.0\r\n"
                f"Via: SIP/2.0/UDP 127.0.0.1:{port};branch=z9hG4bK{tag}\r\n"
                f"From: <sip:test@127.0.0.1>;tag={tag}\r\n"
                f"To: <sip:{edge.address[0]}:{edge.address[1]}>\r\n"
                f"Call-ID: {tag}\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\n"
                "Content-Length: 0\r\n\r\n"
            )
            sock.sendto(probe.encode(), edge.address)
            with contextlib.suppress(TimeoutError, ConnectionError):
                data = await asyncio.wait_for(loop.sock_recv(sock, 65535), 0.3)
                if data.startswith(b"SIP/2.0 200"):
                    return
        raise AssertionError(f"kamailio never answered: {edge.log.read_text()[-3000:]}")
