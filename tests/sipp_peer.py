"""SIPp as the far end of real SIP calls on loopback (scenarios in tests/sipp/).

Each SIPp run gets its own ephemeral SIP and media ports and its own scenario file, rendered
from a template in tests/sipp/ by filling the placeholders written in capitals. Audio the far
end plays is raw PCMU made at test time (a tone, or espeak-ng speech).
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import socket
import struct
import subprocess
import wave
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiortp.codecs import get_codec

SCENARIOS = Path(__file__).parent / "sipp"
SIPP = shutil.which("sipp")
if SIPP is None and os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    raise RuntimeError("SIPp is required under CI: scripts/apt-packages.txt lists sip-tester")
requires_sipp = pytest.mark.skipif(SIPP is None, reason="SIPp (Debian sip-tester) not installed")


def free_udp_port(pair: bool = False) -> int:
    """A port nobody holds right now (pair: an even port whose neighbour is free too)."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as first:
            first.bind(("127.0.0.1", 0))
            port = int(first.getsockname()[1])
            if not pair:
                return port
            if port % 2 or port + 1 > 65535:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
                return port
    raise RuntimeError("no free UDP port")


def tone_pcm(frequency: float, seconds: float, amplitude: int = 12000) -> bytes:
    samples = int(8000 * seconds)
    return struct.pack(
        f"<{samples}h",
        *(int(amplitude * math.sin(2 * math.pi * frequency * i / 8000)) for i in range(samples)),
    )


def pcmu_file(pcm: bytes, directory: Path, name: str) -> Path:
    path = directory / name
    path.write_bytes(get_codec(0).encode(pcm))
    return path


def render(template: str, directory: Path, name: str, **values: str) -> Path:
    text = (SCENARIOS / template).read_text()
    for key, value in values.items():
        text = text.replace(key, value)
    path = directory / name
    path.write_text(text)
    return path


def answer_scenario(
    directory: Path,
    audio: Path,
    *,
    hangup: str,
    hold_ms: int = 1000,
    credentials: tuple[str, str] | None = None,
    name: str = "answer.xml",
) -> Path:
    """A phone that answers and plays ``audio``; ``hangup`` "far" (after hold_ms) or "near"."""
    fragment = (SCENARIOS / f"hangup_{hangup}.xml").read_text().replace("HOLD_MS", str(hold_ms))
    challenge = check = action = ""
    if credentials is not None:
        user, password = credentials
        challenge = (SCENARIOS / "challenge.xml").read_text()
        check = (SCENARIOS / "challenge_check.xml").read_text()
        action = (
            f'      <verifyauth assign_to="authvalid" username="{user}" password="{password}" />'
        )
    return render(
        "uas_answer.xml",
        directory,
        name,
        CHALLENGE_BLOCK=challenge,
        AUTH_ACTION=action,
        AUTH_CHECK=check,
        HANGUP_BLOCK=fragment,
        AUDIO_FILE=str(audio),
    )


@dataclass
class Sipp:
    """One SIPp process; ``port`` is its SIP port."""

    process: asyncio.subprocess.Process
    port: int
    errors: Path

    async def wait(self, within: float = 20) -> int:
        try:
            return await asyncio.wait_for(self.process.wait(), within)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
            raise

    async def finish_ok(self, within: float = 20) -> None:
        code = await self.wait(within)
        detail = ""
        for log in (self.errors, self.errors.with_suffix(".screen.log")):
            if log.exists():
                detail += log.read_text(errors="replace")[-3000:]
        assert code == 0, f"SIPp exited {code}: {detail}"

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


_START_ATTEMPTS = 3


class SippExitedEarly(RuntimeError):
    pass


async def start_sipp(
    scenario: Path,
    *,
    remote: tuple[str, int] | None = None,
    service: str | None = None,
    timeout_seconds: int = 20,
    calls: int = 1,
    rate: float | None = None,
) -> Sipp:
    """SIPp in server mode (no ``remote``) or calling ``remote`` (dialling ``service``) once, or
    ``calls`` times at ``rate`` calls a second."""
    for attempt in range(_START_ATTEMPTS):
        sipp = await _start_once(scenario, remote, service, timeout_seconds, calls, rate)
        if remote is not None:
            return sipp
        try:
            await _wait_listening(sipp.port, sipp.process)
            return sipp
        except SippExitedEarly:
            # Its ports were free when chosen and taken before it bound them (another test
            # run shares the machine): seen in CI as exit 254. New ports, a new SIPp.
            if attempt == _START_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


async def _start_once(
    scenario: Path,
    remote: tuple[str, int] | None,
    service: str | None,
    timeout_seconds: int,
    calls: int,
    rate: float | None,
) -> Sipp:
    assert SIPP is not None
    port = free_udp_port()
    media = free_udp_port(pair=True)
    errors = scenario.with_suffix(".errors.log")
    args = [SIPP]
    if remote is not None:
        args.append(f"{remote[0]}:{remote[1]}")
    args += ["-sf", str(scenario), "-i", "127.0.0.1", "-mi", "127.0.0.1"]
    args += ["-p", str(port), "-mp", str(media), "-m", str(calls), "-nostdin"]
    if rate is not None:
        args += ["-r", f"{rate:g}", "-rp", "1000"]
    args += ["-timeout", f"{timeout_seconds}s", "-timeout_error"]
    args += ["-trace_err", "-error_file", str(errors)]
    args += ["-trace_screen", "-screen_file", str(errors.with_suffix(".screen.log"))]
    if service is not None:
        args += ["-s", service]
    process = await asyncio.create_subprocess_exec(
        *args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=scenario.parent,
    )
    return Sipp(process=process, port=port, errors=errors)


async def _wait_listening(port: int, process: asyncio.subprocess.Process) -> None:
    """SIPp binds its port a moment after it starts; an INVITE sent before is lost.

    Read from the kernel's table, not by trying to bind the port: a probe holding it for that
    instant made SIPp's own bind fail ("Unable to bind main socket", seen once in CI)."""
    for _ in range(200):
        if process.returncode is not None:
            raise SippExitedEarly(f"SIPp exited early ({process.returncode})")
        if _udp_bound(port):
            return
        await asyncio.sleep(0.02)
    raise RuntimeError("SIPp never bound its port")


def _udp_bound(port: int) -> bool:
    """Whether some socket is bound to this UDP port (``/proc/net/udp``: local address
    ``0100007F:PORT`` in hex, after a header line)."""
    suffix = f":{port:04X}"
    with open("/proc/net/udp") as table:
        return any(line.split()[1].endswith(suffix) for line in list(table)[1:])


def wav_channels(data: bytes) -> tuple[list[int], list[int], int]:
    """A two-channel WAV's channels as sample lists, and its rate."""
    import io

    with wave.open(io.BytesIO(data)) as wav:
        assert wav.getnchannels() == 2 and wav.getsampwidth() == 2
        rate = wav.getframerate()
        raw = wav.readframes(wav.getnframes())
    samples = struct.unpack(f"<{len(raw) // 2}h", raw)
    return list(samples[0::2]), list(samples[1::2]), rate


def rms(samples: list[int]) -> float:
    return math.sqrt(sum(s * s for s in samples) / len(samples)) if samples else 0.0


def tone_power(samples: list[int], frequency: float, rate: int = 8000) -> float:
    """Goertzel: how much of ``frequency`` the samples hold."""
    coefficient = 2 * math.cos(2 * math.pi * frequency / rate)
    previous = before = 0.0
    for sample in samples:
        previous, before = sample + coefficient * previous - before, previous
    return previous * previous + before * before - coefficient * previous * before
