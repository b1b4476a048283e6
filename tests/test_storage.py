"""Recording storage: the local directory and S3-compatible storage (a real moto server on
loopback, started here; boto3 is never patched). Under CI these tests run, they never skip."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from callplane.media.storage import (
    LocalStorage,
    S3Storage,
    Storage,
    StorageError,
    check_key,
    storage_from_url,
)
from tests.conftest import client_for
from tests.factories import load, make_org
from tests.test_external_calls_data import CALL, LEG_1, LEG_2, external_call, leg, wav

BUCKET = "callplane-test"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """AWS credentials for moto (any value is accepted) and a fresh bucket."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    storage = S3Storage(BUCKET, "", s3_endpoint)
    with contextlib.suppress(storage.client.exceptions.BucketAlreadyOwnedByYou):
        storage.client.create_bucket(Bucket=BUCKET)
    return s3_endpoint


async def collect(storage: Storage, key: str, start: int, end: int) -> bytes:
    return b"".join([chunk async for chunk in storage.read(key, start, end)])


async def exercise(storage: Storage) -> None:
    data = bytes(range(256)) * 600  # larger than one read chunk
    await storage.put("7/abc", data, "audio/wav")
    assert await storage.size("7/abc") == len(data)
    assert await collect(storage, "7/abc", 0, len(data) - 1) == data
    assert await collect(storage, "7/abc", 70_000, 70_009) == data[70_000:70_010]
    await storage.put("7/abc", b"replaced", "audio/wav")
    assert await collect(storage, "7/abc", 0, 7) == b"replaced"
    await storage.delete("7/abc")
    with pytest.raises(StorageError):
        await storage.size("7/abc")
    await exercise_streams(storage)


async def exercise_streams(storage: Storage) -> None:
    """Uploads of unknown length (put_stream), whole files (put_file), and download."""
    import tempfile

    async def chunks(count: int, fail: bool = False) -> AsyncIterator[bytes]:
        for n in range(count):
            yield bytes([n % 256]) * 300_000
        if fail:
            raise RuntimeError("client went away")

    assert await storage.put_stream("7/stream", chunks(5), "audio/wav") == 1_500_000
    assert await storage.size("7/stream") == 1_500_000
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "copy"
        await storage.download("7/stream", copy)
        assert copy.read_bytes() == b"".join([bytes([n]) * 300_000 for n in range(5)])
        copy.write_bytes(b"file bytes")
        await storage.put_file("7/stream", copy, "audio/wav")
    assert await collect(storage, "7/stream", 0, 9) == b"file bytes"
    # A stream that fails half-way stores nothing, and leaves what was there alone.
    with pytest.raises(RuntimeError):
        await storage.put_stream("7/stream", chunks(3, fail=True), "audio/wav")
    assert await collect(storage, "7/stream", 0, 9) == b"file bytes"
    with pytest.raises(RuntimeError):
        await storage.put_stream("7/other", chunks(2, fail=True), "audio/wav")
    with pytest.raises(StorageError):
        await storage.size("7/other")
    await storage.delete("7/stream")


async def test_local_storage(tmp_path: Path):
    storage = LocalStorage(tmp_path / "rec")
    await exercise(storage)
    assert storage.presigned_url("7/abc", "audio/wav") is None
    # Nothing is left behind but the (empty) organization folder.
    assert [p.name for p in (tmp_path / "rec").rglob("*")] == ["7"]


async def test_s3_storage(s3_env: str):
    storage = S3Storage(BUCKET, "prefix/inner", s3_env)
    await exercise(storage)
    await storage.put("7/def", b"presigned bytes", "audio/mpeg")
    url = storage.presigned_url("7/def", "audio/mpeg")
    assert url is not None and url.startswith(f"{s3_env}/{BUCKET}/prefix/inner/7/def?")
    assert "Expires=3600" in url or "X-Amz-Expires=3600" in url
    async with httpx.AsyncClient() as http:
        response = await http.get(url)
    assert response.status_code == 200
    assert response.content == b"presigned bytes"
    assert response.headers["content-type"] == "audio/mpeg"


@pytest.mark.parametrize(
    "key", ["../etc/passwd", "/abs", "7/../../x", "7/a.b", "", "7//x", "7/x/", "a b", "é", "7\\x"]
)
async def test_keys_cannot_escape_the_storage_root(tmp_path: Path, key: str):
    with pytest.raises(StorageError):
        check_key(key)
    with pytest.raises(StorageError):
        await LocalStorage(tmp_path).put(key, b"x", "audio/wav")


def test_storage_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    relative = storage_from_url("file://./recordings")
    assert isinstance(relative, LocalStorage) and relative.root == tmp_path / "recordings"
    absolute = storage_from_url(f"file://{tmp_path}/abs")
    assert isinstance(absolute, LocalStorage) and absolute.root == tmp_path / "abs"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    s3 = storage_from_url("s3://bucket/some/prefix/", "http://127.0.0.1:9")
    assert isinstance(s3, S3Storage) and (s3.bucket, s3.prefix) == ("bucket", "some/prefix")
    for bad in ("ftp://x/y", "s3:///prefix", "file://", "recordings"):
        with pytest.raises(ValueError):
            storage_from_url(bad)


async def test_external_call_urls_from_s3_download_the_exact_bytes(make_app, s3_env: str):
    """End to end with S3: the loader writes through the configured storage and the API hands
    out the store's own presigned URLs, chronological, one per playable leg."""
    app = await make_app(storage_url=f"s3://{BUCKET}/recordings", s3_endpoint_url=s3_env)
    org = await make_org(app)
    first, second = wav(fill=3), wav(fill=4)
    legs = [
        leg(LEG_2, "2025-03-01T10:01:00Z", second),
        leg(LEG_1, "2025-03-01T10:00:00Z", first),
        leg("5d7c1b2a-0000-4000-8000-0000000000b1", "2025-03-01T10:02:00Z", b"x", deleted=True),
    ]
    await load(app, org, {"external_calls": [external_call(recordings=legs)]})
    async with client_for(app) as client:
        body = (await client.get(f"/v1/external_calls/{CALL}", headers=org.headers)).json()
    urls = body["recording_presigned_urls"]
    assert len(urls) == 2
    assert urls[0].startswith(f"{s3_env}/{BUCKET}/recordings/{org.id}/{LEG_1}?")
    async with httpx.AsyncClient() as http:
        downloads = [await http.get(url) for url in urls]
        ranged = await http.get(urls[0], headers={"Range": "bytes=0-3"})
    assert [d.content for d in downloads] == [first, second]
    assert ranged.status_code == 206 and ranged.content == b"RIFF"
