"""External calls come in (docs/api-contract.md#external-calls): create a session, upload legs, the
worker transcribes them.

Audio is espeak-ng speech made at test time; the recogniser is the real one (loaded once per
test process). The worker's step (``process_next_leg``) is driven directly so each test decides
when processing happens and can look at the states in between.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from callplane.external_calls.processing import process_next_leg
from callplane.models.external_calls import Recording
from tests.audio import ESPEAK_RATE, encoded, silence, speech, transcriber, wav_bytes, words_of
from tests.factories import OrgHandle, make_org, runtime_of

np = pytest.importorskip("numpy")

SENTENCE = "Please call me back tomorrow morning about the invoice."
KEYWORDS = {"call", "back", "tomorrow", "morning", "invoice"}
MEDIA = {"wav": "audio/wav", "mp3": "audio/mpeg", "flac": "audio/flac", "ogg": "audio/ogg"}


async def create_call(client: httpx.AsyncClient, org: OrgHandle, **fields: Any) -> dict[str, Any]:
    response = await client.post("/v1/external_calls", json=fields, headers=org.headers)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def upload(
    client: httpx.AsyncClient,
    org: OrgHandle,
    call_id: str,
    audio: bytes,
    media_type: str = "audio/wav",
    query: str = "",
) -> httpx.Response:
    return await client.post(
        f"/v1/external_calls/{call_id}/recordings{query}",
        content=audio,
        headers={**org.headers, "Content-Type": media_type},
    )


async def get_call(client: httpx.AsyncClient, org: OrgHandle, call_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/external_calls/{call_id}", headers=org.headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def leg_error(app: FastAPI, org: OrgHandle, leg_id: str) -> str | None:
    """Why a leg is in error: kept on the row (and sent in the external_call.error webhook),
    not in the Recording resource, whose fields SPEC fixes."""
    async with runtime_of(app).db.session(write=False) as session:
        leg = await session.get(Recording, (org.id, uuid.UUID(leg_id)))
        assert leg is not None
        return leg.error


async def drain(app: FastAPI) -> int:
    """Run the worker's step until no leg is waiting; how many legs it took."""
    taken = 0
    while await process_next_leg(runtime_of(app), transcriber()):
        taken += 1
    return taken


def spoken_audio(fmt: str) -> bytes:
    samples = speech(SENTENCE)
    return wav_bytes(samples) if fmt == "wav" else encoded(samples, fmt)


async def test_create_external_call(app: FastAPI, client: httpx.AsyncClient) -> None:
    org = await make_org(app)
    body = await create_call(
        client,
        org,
        external_call_id="zoom-42",
        title="Billing question",
        direction="outbound",
        from_number="+14155550100",
        to_number="+14155550111",
        started_at="2026-11-01T09:30:00Z",
        source={"name": "Zoom Phone", "provider": "zoom"},
    )
    assert body["status"] == "processing"
    assert body["recordings"] == [] and body["recording_presigned_urls"] == []
    assert body["recording_count"] == 0 and body["duration_seconds"] is None
    assert body["direction"] == "outbound" and body["external_call_id"] == "zoom-42"
    assert body["started_at"] == "2026-11-01T09:30:00Z"
    assert body["source"]["name"] == "Zoom Phone" and uuid.UUID(body["source"]["id"])
    assert await get_call(client, org, body["id"]) == body


@pytest.mark.parametrize(
    "body",
    [
        {"direction": "sideways"},
        {"title": "x" * 501},
        {"started_at": "yesterday"},
        {"source": "zoom"},
        [],
    ],
    ids=["direction", "title-length", "started_at", "source-type", "not-an-object"],
)
async def test_create_validation_is_a_detail_list(
    app: FastAPI, client: httpx.AsyncClient, body: Any
) -> None:
    org = await make_org(app)
    response = await client.post("/v1/external_calls", json=body, headers=org.headers)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail and all(set(item) == {"loc", "msg", "type"} for item in detail)


@pytest.mark.parametrize("fmt", ["wav", "mp3", "flac", "ogg"])
async def test_upload_is_transcribed(app: FastAPI, client: httpx.AsyncClient, fmt: str) -> None:
    org = await make_org(app)
    call = await create_call(client, org, title="Callback")
    audio = spoken_audio(fmt)
    response = await upload(
        client,
        org,
        call["id"],
        audio,
        MEDIA[fmt],
        f"?file_name=leg.{fmt}&started_at=2026-11-01T10:00:00Z",
    )
    assert response.status_code == 201, response.text
    leg = response.json()
    assert leg["status"] == "pending" and leg["file_name"] == f"leg.{fmt}"
    assert leg["transcript"] is None and leg["summary"] is None

    pending = await get_call(client, org, call["id"])
    assert pending["status"] == "processing" and pending["recording_count"] == 1
    assert pending["recordings"][0]["transcript"] is None

    assert await drain(app) == 1
    body = await get_call(client, org, call["id"])
    (done,) = body["recordings"]
    assert done["status"] == "transcribed", done
    length = len(speech(SENTENCE)) / ESPEAK_RATE
    heard = words_of(" ".join(e["text"] for e in done["transcript"]))
    assert heard >= KEYWORDS
    for entry in done["transcript"]:
        assert 0 <= entry["start"] < entry["end"] <= length + 0.1
        assert 0 < entry["confidence"] <= 1
        assert entry["channel"] == "mono" and entry["speaker"] == "speaker_1"
    assert done["summary"] and "invoice" in done["summary"].lower()
    assert not done["summary"].startswith("Caller")
    assert body["status"] == "transcribed"
    assert body["duration_seconds"] == round(length)
    assert len(body["recording_presigned_urls"]) == 1

    # The URL serves the uploaded bytes as they came.
    served = await client.get(
        body["recording_presigned_urls"][0].replace("http://127.0.0.1:8000", "")
    )
    assert served.status_code == 200 and served.content == audio
    assert served.headers["content-type"] == MEDIA[fmt]


async def test_stereo_gives_one_channel_per_side(app: FastAPI, client: httpx.AsyncClient) -> None:
    org = await make_org(app)
    call = await create_call(client, org)
    left = speech("Good morning, thank you for calling the pharmacy.")
    right = speech("I would like to order my prescription.")
    n = len(left) + len(right) + ESPEAK_RATE
    stereo = np.zeros((n, 2), dtype=np.int16)
    stereo[: len(left), 0] = left
    stereo[len(left) + ESPEAK_RATE // 2 :][: len(right), 1] = right
    assert (await upload(client, org, call["id"], wav_bytes(stereo))).status_code == 201
    await drain(app)

    (leg,) = (await get_call(client, org, call["id"]))["recordings"]
    assert leg["status"] == "transcribed", leg
    by_channel: dict[str, str] = {}
    for entry in leg["transcript"]:
        by_channel[entry["channel"]] = by_channel.get(entry["channel"], "") + " " + entry["text"]
    assert set(by_channel) == {"left", "right"}
    assert {"morning", "pharmacy"} <= words_of(by_channel["left"])
    assert {"order", "prescription"} <= words_of(by_channel["right"])
    assert "prescription" not in words_of(by_channel["left"])
    speakers = {e["channel"]: e["speaker"] for e in leg["transcript"]}
    assert speakers == {"left": "speaker_1", "right": "speaker_2"}
    starts = [e["start"] for e in leg["transcript"]]
    assert starts == sorted(starts)


def _truncated_flac() -> bytes:
    return encoded(speech(SENTENCE), "flac")[:60]


BAD_UPLOADS = {
    "garbage": (lambda: bytes(range(256)) * 40, "audio/wav", "not wav"),
    "empty": (lambda: b"", "audio/wav", "empty"),
    "silent": (lambda: wav_bytes(silence(2.0)), "audio/wav", "silent"),
    "zero-seconds": (lambda: wav_bytes(silence(0)), "audio/wav", "no audio"),
    "truncated": (_truncated_flac, "audio/flac", ""),
    "flac-declared-as-mp3": (lambda: spoken_audio("flac"), "audio/mpeg", "not mp3"),
    "json-as-wav": (lambda: b'{"hello": "world"}', "audio/wav", "not wav"),
}


@pytest.mark.parametrize("case", sorted(BAD_UPLOADS))
async def test_unusable_upload_is_a_leg_in_error(
    app: FastAPI, client: httpx.AsyncClient, case: str
) -> None:
    make, media_type, reason = BAD_UPLOADS[case]
    org = await make_org(app)
    call = await create_call(client, org)
    response = await upload(client, org, call["id"], make(), media_type)
    assert response.status_code == 201, response.text
    assert await drain(app) == 1

    body = await get_call(client, org, call["id"])
    (leg,) = body["recordings"]
    assert leg["status"] == "error"
    assert reason in (await leg_error(app, org, leg["id"]) or "")
    assert leg["transcript"] is None and leg["summary"] is None
    assert body["status"] == "error"
    assert await drain(app) == 0  # settled: never taken again


async def test_decoded_length_limit(make_app: Any) -> None:
    """A leg longer than CALLPLANE_MAX_RECORDING_SECONDS is an error, measured on the decoded
    audio (a FLAC of 30 s of silence and speech is small on disk)."""
    app = await make_app(max_recording_seconds=10)
    org = await make_org(app)
    samples = np.concatenate([speech(SENTENCE), silence(30)])
    flac = encoded(samples, "flac")
    assert len(flac) < 200_000
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as client:
        call = await create_call(client, org)
        assert (await upload(client, org, call["id"], flac, "audio/flac")).status_code == 201
        await drain(app)
        (leg,) = (await get_call(client, org, call["id"]))["recordings"]
    assert leg["status"] == "error"
    assert "longer than the limit of 10 seconds" in (await leg_error(app, org, leg["id"]) or "")


async def test_one_failed_leg_makes_the_call_error(app: FastAPI, client: httpx.AsyncClient) -> None:
    org = await make_org(app)
    call = await create_call(client, org)
    await upload(
        client, org, call["id"], spoken_audio("wav"), query="?started_at=2026-11-01T10:00:00Z"
    )
    await drain(app)
    assert (await get_call(client, org, call["id"]))["status"] == "transcribed"
    await upload(client, org, call["id"], b"junk", query="?started_at=2026-11-01T10:05:00Z")
    assert (await get_call(client, org, call["id"]))["status"] == "processing"
    await drain(app)
    body = await get_call(client, org, call["id"])
    assert [leg["status"] for leg in body["recordings"]] == ["transcribed", "error"]
    assert body["status"] == "error" and body["recording_count"] == 2
    # The failed leg has audio but no URL is useful for it either way; the good one keeps its.
    assert len(body["recording_presigned_urls"]) == 2


async def test_upload_size_limit_is_413_in_the_family_shape(make_app: Any, tmp_path: Any) -> None:
    app = await make_app(max_recording_bytes=4096)
    org = await make_org(app)

    async def chunked() -> Any:
        for _ in range(10):
            yield b"\0" * 1000

    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as client:
        call = await create_call(client, org)
        declared = await upload(client, org, call["id"], b"\0" * 5000)
        streamed = await client.post(
            f"/v1/external_calls/{call['id']}/recordings",
            content=chunked(),
            headers={**org.headers, "Content-Type": "audio/wav"},
        )
        fits = await upload(client, org, call["id"], b"\0" * 4096)
        body = await get_call(client, org, call["id"])
    for response in (declared, streamed):
        assert response.status_code == 413
        error = response.json()
        assert error["status"] == "error" and error["success"] is False
        assert "4096 bytes" in error["error"] and error["errors"] == [error["error"]]
    assert fits.status_code == 201
    assert body["recording_count"] == 1  # nothing half-written by the refused uploads
    stored = [p for p in (tmp_path / "recordings").rglob("*") if p.is_file()]
    assert len(stored) == 1


async def test_upload_needs_an_audio_content_type(app: FastAPI, client: httpx.AsyncClient) -> None:
    org = await make_org(app)
    call = await create_call(client, org)
    for media_type in ("application/json", "text/plain", "audio/x-unknown", None):
        headers = dict(org.headers)
        if media_type:
            headers["Content-Type"] = media_type
        response = await client.post(
            f"/v1/external_calls/{call['id']}/recordings", content=b"RIFF", headers=headers
        )
        assert response.status_code == 422
        (item,) = response.json()["detail"]
        assert item["loc"] == ["header", "content-type"]
    assert (await get_call(client, org, call["id"]))["recording_count"] == 0


@pytest.mark.parametrize(
    "query", ["?file_name=", "?file_name=a/b.wav", "?started_at=soon", "?redact=maybe"]
)
async def test_upload_query_validation(app: FastAPI, client: httpx.AsyncClient, query: str) -> None:
    org = await make_org(app)
    call = await create_call(client, org)
    response = await upload(client, org, call["id"], b"RIFF", query=query)
    assert response.status_code == 422
    assert all(set(item) == {"loc", "msg", "type"} for item in response.json()["detail"])


async def test_another_organizations_call_is_404(app: FastAPI, client: httpx.AsyncClient) -> None:
    owner, other = await make_org(app, "Owner"), await make_org(app, "Other")
    call = await create_call(client, owner)
    for org, call_id in ((other, call["id"]), (owner, str(uuid.uuid4()))):
        response = await upload(client, org, call_id, spoken_audio("wav"))
        assert response.status_code == 404
        assert response.json() == {
            "status": "error",
            "success": False,
            "error": "External call not found",
            "errors": ["External call not found"],
        }
    assert (
        await client.get(f"/v1/external_calls/{call['id']}", headers=other.headers)
    ).status_code == 404
    assert (await get_call(client, owner, call["id"]))["recording_count"] == 0
    bad = await upload(client, owner, "not-a-uuid", b"RIFF")
    assert bad.status_code == 422 and "detail" in bad.json()


def _tone_share(samples: Any, rate: int, hz: float) -> float:
    """Share of the signal's energy within 30 Hz of ``hz``."""
    spectrum = np.abs(np.fft.rfft(samples.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(len(samples), 1 / rate)
    total = float(spectrum.sum()) or 1.0
    return float(spectrum[np.abs(freqs - hz) < 30].sum()) / total


async def test_redaction_hides_a_spoken_card_number(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    import io
    import wave

    from callplane.external_calls.redaction import TONE_HZ

    org = await make_org(app)
    call = await create_call(client, org)
    intro, digits, outro = (
        speech("My card number is"),
        speech("4, 1, 1, 1, 1, 1, 1, 1"),
        speech("Thank you very much."),
    )
    gap = silence(0.3)
    audio = wav_bytes(np.concatenate([intro, gap, digits, gap, outro]))
    digits_from = (len(intro) + len(gap)) / ESPEAK_RATE
    digits_to = digits_from + len(digits) / ESPEAK_RATE

    response = await upload(client, org, call["id"], audio, query="?redact=true")
    assert response.status_code == 201
    waiting = await get_call(client, org, call["id"])
    assert waiting["recording_count"] == 1 and waiting["recording_presigned_urls"] == []

    await drain(app)
    body = await get_call(client, org, call["id"])
    (leg,) = body["recordings"]
    assert leg["status"] == "transcribed"
    text = " ".join(e["text"] for e in leg["transcript"])
    assert "[redacted]" in text
    assert sum(c.isdigit() for c in text) < 6
    assert {"card", "number", "thank"} <= words_of(text)
    assert "[redacted]" not in (leg["summary"] or "") or "1" not in leg["summary"]
    assert len(body["recording_presigned_urls"]) == 1

    served = await client.get(
        body["recording_presigned_urls"][0].replace("http://127.0.0.1:8000", "")
    )
    assert served.status_code == 200 and served.headers["content-type"] == "audio/wav"
    assert served.content != audio
    with wave.open(io.BytesIO(served.content)) as w:
        rate = w.getframerate()
        redacted = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    inside = redacted[int((digits_from + 0.15) * rate) : int((digits_to - 0.15) * rate)]
    assert _tone_share(inside, rate, TONE_HZ) > 0.95
    spoken = redacted[int(0.1 * rate) : int(0.9 * rate)]  # "My card": still speech
    assert _tone_share(spoken, rate, TONE_HZ) < 0.2 and np.abs(spoken).max() > 1000


async def test_a_leg_whose_worker_died_is_processed_again(
    make_app: Any, database_url: str, tmp_path: Any
) -> None:
    """A worker process is killed (SIGKILL) while transcribing a leg: while it lives its lease
    is renewed and nobody else takes the leg; once dead, the lease lapses and the next worker
    processes the leg to the end."""
    import asyncio
    import os
    import signal
    import sys

    app = await make_app(recording_lease_seconds=1.0)
    org = await make_org(app)
    storage_url = f"file://{tmp_path / 'recordings'}"
    script = f"""
import asyncio, sys, time
from callplane.external_calls.processing import process_next_leg
from callplane.runtime import Runtime
from callplane.settings import Settings
from callplane.speech.base import Transcriber

class Stuck(Transcriber):
    def transcribe(self, pcm, sample_rate, *, hints=()):
        print("transcribing", flush=True)
        time.sleep(3600)

settings = Settings(_env_file=None, database_url={database_url!r}, storage_url={storage_url!r},
                    recording_lease_seconds=1.0, log_level="warning")
asyncio.run(process_next_leg(Runtime.build(settings), Stuck()))
"""
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as client:
        call = await create_call(client, org)
        leg_id = (await upload(client, org, call["id"], spoken_audio("wav"))).json()["id"]
        worker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            script,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        assert worker.stdout is not None
        try:
            line = await asyncio.wait_for(worker.stdout.readline(), 60)
            assert line.strip() == b"transcribing"
            (leg,) = (await get_call(client, org, call["id"]))["recordings"]
            assert leg["status"] == "processing" and leg["transcript"] is None
            # Longer than one lease: the living worker renews it, so the leg is not taken.
            await asyncio.sleep(1.5)
            assert not await process_next_leg(runtime_of(app), transcriber())
        finally:
            worker.send_signal(signal.SIGKILL)
            await worker.wait()
        deadline = asyncio.get_running_loop().time() + 10
        while not await process_next_leg(runtime_of(app), transcriber()):
            assert asyncio.get_running_loop().time() < deadline, "the leg was never retried"
            await asyncio.sleep(0.2)
        body = await get_call(client, org, call["id"])
    (leg,) = body["recordings"]
    assert leg["id"] == leg_id and leg["status"] == "transcribed"
    assert words_of(" ".join(e["text"] for e in leg["transcript"])) >= KEYWORDS
    assert body["status"] == "transcribed"
    async with runtime_of(app).db.session(write=False) as session:
        row = await session.get(Recording, (org.id, uuid.UUID(leg_id)))
        assert row is not None and row.attempts == 2 and row.lease_token is None


async def test_mono_saved_as_stereo_is_one_channel(app: FastAPI, client: httpx.AsyncClient) -> None:
    org = await make_org(app)
    call = await create_call(client, org)
    samples = speech(SENTENCE)
    both = np.stack([samples, samples], axis=1)
    assert (await upload(client, org, call["id"], wav_bytes(both))).status_code == 201
    await drain(app)
    (leg,) = (await get_call(client, org, call["id"]))["recordings"]
    assert leg["status"] == "transcribed"
    assert {e["channel"] for e in leg["transcript"]} == {"mono"}
    assert words_of(" ".join(e["text"] for e in leg["transcript"])) >= KEYWORDS


async def test_hidden_legs_are_not_processed(app: FastAPI, client: httpx.AsyncClient) -> None:
    """Deleted and excluded legs are hidden everywhere: the worker does not take them either,
    and they do not hold their call in processing. A leg imported as processing, which no
    worker holds, is taken like a pending one."""
    from tests.factories import load

    org = await make_org(app)
    call_id = str(uuid.uuid4())
    audio = base64.b64encode(spoken_audio("wav")).decode()
    await load(
        app,
        org,
        {
            "external_calls": [
                {
                    "id": call_id,
                    "recordings": [
                        {"status": "pending", "audio_base64": audio, "deleted": True},
                        {"status": "pending", "audio_base64": audio, "excluded": True},
                        {"status": "processing", "audio_base64": audio},
                    ],
                }
            ]
        },
    )
    assert await drain(app) == 1
    body = await get_call(client, org, call_id)
    assert [leg["status"] for leg in body["recordings"]] == ["transcribed"]
    assert body["status"] == "transcribed"
