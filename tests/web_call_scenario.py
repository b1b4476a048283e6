"""One web call from a real Chromium, run inside a private network namespace.

``test_web_calls_browser.py`` runs this module under ``unshare -n``: the namespace has only its
own loopback and a veth pair with two 10.x addresses (a browser's WebRTC ignores loopback, so
the media flows over those). Nothing leaves the namespace. Here: the app on 10.x, the
stub LLM on the namespace's loopback, Chromium whose microphone is a WAV file, and the
dashboard's "Talk to this agent" page. The outcome is printed as one JSON line.

    python -m tests.web_call_scenario '{"database_url": ..., "storage": ..., "wav": ...}'
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import socket
import subprocess
import sys
import threading
import time
import uuid
import wave
from typing import Any

import httpx
import uvicorn

from callplane.app import create_app
from callplane.kit.db import Database
from callplane.loader import load_document
from callplane.orgs.service import create_organization, issue_key
from callplane.users.service import create_user
from tests.browser import CHROMIUM_ARGS, run_elsewhere
from tests.conftest import make_settings
from tests.llm_stub import Reply, StubLLM
from tests.web_call_peer import Peer

HOST = "10.89.0.1"
PEER = "10.89.0.2"
REPLY = "Certainly, a table for four on Friday. Goodbye!"
AGENT = str(uuid.uuid4())
EMAIL = "talker@example.com"
PASSWORD = "talk-to-me-please"


def private_network() -> None:
    """Loopback up, and a veth pair whose both ends (and addresses) stay in this namespace."""
    for command in (
        "ip link set lo up",
        "ip link add cpw0 type veth peer name cpw1",
        f"ip addr add {HOST}/24 dev cpw0",
        f"ip addr add {PEER}/24 dev cpw1",
        "ip link set cpw0 up",
        "ip link set cpw1 up",
    ):
        subprocess.run(command.split(), check=True, timeout=10)


async def _setup(database_url: str, settings: Any) -> str:
    db = Database(database_url, pool_size=1)
    try:
        async with db.session(write=True) as session:
            org = await create_organization(session, "Web Co")
            key = await issue_key(session, org.id)
            await create_user(session, org.id, EMAIL, PASSWORD)
            agents = [{"uuid": AGENT, "name": "Front desk", "config": {"prompt": "Be kind."}}]
            await load_document(session, settings, org.id, {"agents": agents})
            await session.commit()
            return key.api_key
    finally:
        await db.dispose()


def _serve(settings: Any) -> tuple[uvicorn.Server, threading.Thread, str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Every address of the namespace: the page is opened on its loopback (a secure context,
    # where getUserMedia exists), and WebRTC connects over the veth's 10.x addresses.
    sock.bind(("0.0.0.0", 0))  # noqa: S104
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = create_app(settings.model_copy(update={"public_url": url}))
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", loop="asyncio", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.05)
    return server, thread, url


async def _warm_up(url: str, api_key: str) -> None:
    """One short call first: the first web call of a process loads the speech recogniser, and
    the browser's microphone (a file) plays on meanwhile."""
    peer = Peer()
    try:
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            response = await client.post(
                "/v1/web_calls",
                json={"agent_id": AGENT, "sdp": await peer.offer()},
                headers={"Authorization": f"Bearer {api_key}"},
            )
            response.raise_for_status()
        await peer.accept(response.json()["sdp"])
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(peer.connected.wait(), 30)
    finally:
        await peer.close()


def _voiced_seconds(wav_bytes: bytes) -> list[float]:
    """Seconds of sound (100 ms windows above a low RMS) on each channel of a recording."""
    with wave.open(io.BytesIO(wav_bytes)) as reader:
        channels, rate = reader.getnchannels(), reader.getframerate()
        frames = reader.readframes(reader.getnframes())
    import numpy as np

    samples = np.frombuffer(frames, dtype=np.int16).reshape(-1, channels).astype(np.float64)
    step = rate // 10
    voiced = []
    for channel in range(channels):
        track = samples[:, channel]
        windows = [track[i : i + step] for i in range(0, len(track) - step, step)]
        voiced.append(sum(0.1 for w in windows if np.sqrt(np.mean(w * w)) > 300))
    return voiced


def main(args: dict[str, Any]) -> dict[str, Any]:
    from playwright.sync_api import expect, sync_playwright

    private_network()
    outcome: dict[str, Any] = {}
    with StubLLM(replies=[Reply(REPLY, "end_call", {"reason": "booked"})]) as brain:
        settings = make_settings(
            args["database_url"],
            storage_url=f"file://{args['storage']}",
            llm_base_url=brain.base_url,
            llm_timeout_seconds=20,
            max_call_seconds=90,
            web_call_connect_seconds=30,
            signin_limit="100/minute",
        )
        api_key = run_elsewhere(lambda: _setup(args["database_url"], settings))
        server, thread, url = _serve(settings)
        try:
            run_elsewhere(lambda: _warm_up(url, api_key))
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=args["chromium"],
                    args=[
                        *CHROMIUM_ARGS,
                        "--use-fake-ui-for-media-stream",
                        "--use-fake-device-for-media-stream",
                        f"--use-file-for-fake-audio-capture={args['wav']}%noloop",
                        "--autoplay-policy=no-user-gesture-required",
                        "--disable-features=WebRtcHideLocalIpsWithMdns",
                    ],
                )
                context = browser.new_context(base_url=url)
                context.grant_permissions(["microphone"], origin=url)
                page = context.new_page()
                page.set_default_timeout(15_000)
                page.goto("/dashboard/")
                page.get_by_label("Email").fill(EMAIL)
                page.get_by_label("Password").fill(PASSWORD)
                page.get_by_role("button", name="Sign in").click()
                expect(page.get_by_role("button", name="Sign in")).to_have_count(0)
                page.goto(f"/dashboard/agents/{AGENT}/talk")
                page.get_by_role("button", name="Talk to this agent").click()
                # The first web call loads the speech recogniser: seconds on a busy machine.
                expect(page.locator("#talk-call-link")).not_to_be_empty(timeout=90_000)
                call_id = page.locator("#talk-call-link").inner_text()
                transcript = page.locator("#transcript")
                # The live transcript: the caller's words, then the agent's reply.
                expect(transcript.locator("li.assistant").last).to_contain_text(
                    "Goodbye", timeout=120_000
                )
                outcome["live"] = transcript.locator("li").all_inner_texts()
                expect(page.locator("#talk-status")).to_have_text("Call ended.", timeout=60_000)
                browser.close()
            with httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {api_key}"}, timeout=10
            ) as api:
                deadline = time.monotonic() + 60
                while True:
                    call = api.get(f"/v1/calls/{call_id}").json()["call"]
                    if call["status"] not in ("in_progress", "dialing") and call.get("summary"):
                        break
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.2)
                outcome["call"] = call
                outcome["events"] = api.get(f"/v1/calls/{call_id}/events").json()["events"]
                recording = call.get("recording_presigned_url")
                if recording:
                    path = recording.split("://", 1)[1].split("/", 1)[1]
                    outcome["voiced"] = _voiced_seconds(api.get("/" + path).content)
        finally:
            server.should_exit = True
            thread.join(timeout=30)
    return outcome


if __name__ == "__main__":
    result = main(json.loads(sys.argv[1]))
    print(json.dumps(result, default=str))
    sys.stdout.flush()
