"""The worker transcribes uploaded legs by itself and tells a webhook endpoint
(docs/api-contract.md).

Here the engine runs embedded in the app (as `make run` does on SQLite): nothing drives the
pipeline but the upload's wake-up. A real HTTP receiver on 127.0.0.1 collects the webhooks.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from fastapi import FastAPI

from tests.audio import speech, wav_bytes, words_of
from tests.factories import make_org
from tests.test_external_calls_ingest import SENTENCE, create_call, get_call, upload
from tests.webhook_receiver import receiver


async def test_uploaded_legs_are_transcribed_by_the_worker_and_reported(make_app: Any) -> None:
    app: FastAPI = await make_app(
        worker="embedded", worker_poll_seconds=0.05, webhook_allow_private_networks=True
    )
    org = await make_org(app)
    async with (
        receiver() as hooks,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        created = await client.post(
            "/v1/webhooks",
            json={"url": hooks.url, "events": ["external_call.transcribed", "external_call.error"]},
            headers=org.headers,
        )
        assert created.status_code == 201, created.text
        good, bad = await create_call(client, org), await create_call(client, org)
        leg = (await upload(client, org, good["id"], wav_bytes(speech(SENTENCE)))).json()
        await upload(client, org, bad["id"], b"definitely not audio")

        bodies = [json.loads(r.body) for r in await hooks.wait_for(2, within=60)]
        by_type = {b["type"]: b for b in bodies}
        assert set(by_type) == {"external_call.transcribed", "external_call.error"}
        assert all(r.headers["webhook-signature"].startswith("v1,") for r in hooks.received)

        done = by_type["external_call.transcribed"]["data"]
        assert done["external_call"]["id"] == good["id"]
        assert done["external_call"]["status"] == "transcribed"
        assert done["recording"]["id"] == leg["id"]
        assert {"tomorrow", "invoice"} <= words_of(
            " ".join(e["text"] for e in done["recording"]["transcript"])
        )
        failed = by_type["external_call.error"]["data"]
        assert failed["external_call"]["id"] == bad["id"]
        assert failed["recording"]["status"] == "error"
        assert "not wav" in failed["error"]

        # The API agrees with what was reported.
        assert (await get_call(client, org, good["id"]))["status"] == "transcribed"
        assert (await get_call(client, org, bad["id"]))["status"] == "error"
