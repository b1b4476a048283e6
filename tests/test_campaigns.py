"""Campaigns over HTTP: settings with defaults, the state machine, recipients from JSON and CSV,
the export, and every way their input can be wrong (``docs/campaigns.md``)."""

from __future__ import annotations

import asyncio
import csv
import io
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from callplane.models.webhooks import WebhookEvent
from tests.campaigns_support import (
    AGENT,
    add_csv,
    create_campaign,
    open_schedule,
    org_with_agent,
    status_error,
)
from tests.conftest import AppFactory, client_for
from tests.factories import runtime_of
from tests.tenancy_check import checked

ZERO_COUNTS = {
    "total": 0,
    "queued": 0,
    "calling": 0,
    "completed": 0,
    "voicemail": 0,
    "exhausted": 0,
    "suppressed": 0,
    "opted_out": 0,
    "expired": 0,
    "cancelled": 0,
    "attempts": 0,
}


async def test_a_campaign_shows_every_setting_with_its_defaults(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    org = await org_with_agent(app)
    campaign = await create_campaign(client, org)
    assert campaign["status"] == "draft"
    assert campaign["agent_id"] == AGENT
    assert campaign["agent_branch_name"] == "main"
    assert campaign["schedule"] == {
        "timezone": "recipient",
        "windows": [
            {"days": ["mon", "tue", "wed", "thu", "fri"], "start": "09:00", "end": "17:00"}
        ],
        "start_at": None,
        "end_at": None,
    }
    assert campaign["retry"] == {
        "max_attempts": 3,
        "on": ["busy", "no_answer", "failed"],
        "delay_seconds": 3600,
    }
    assert campaign["pacing"] == {"max_concurrent": 5, "calls_per_minute": 60}
    assert campaign["counts"] == ZERO_COUNTS
    assert campaign["started_at"] is None and campaign["finished_at"] is None
    got = await client.get(f"/v1/campaigns/{campaign['id']}", headers=org.headers)
    assert got.status_code == 200 and got.json()["campaign"] == campaign


async def test_the_list_pages_newest_first_and_stays_in_the_organization(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    org = await org_with_agent(app)
    other = await org_with_agent(app, "Other", number=2)
    ids = [(await create_campaign(client, org, name=f"c{n}"))["id"] for n in range(3)]
    page = (await client.get("/v1/campaigns?page_size=2", headers=org.headers)).json()
    assert [c["id"] for c in page["campaigns"]] == ids[::-1][:2]
    assert (page["total_count"], page["page"], page["page_size"], page["total_pages"]) == (
        3,
        1,
        2,
        2,
    )
    theirs = await client.get("/v1/campaigns", headers=other.headers)
    assert theirs.json()["campaigns"] == []
    status_error(await client.get(f"/v1/campaigns/{ids[0]}", headers=other.headers), 404, "not")


BAD_BODIES = [
    ({"schedule": {"windows": [{"start": "25:00", "end": "17:00"}]}}, "start"),
    ({"schedule": {"windows": [{"days": ["funday"]}]}}, "days"),
    ({"schedule": {"timezone": "Mars/Olympus"}}, "timezone"),
    ({"schedule": {"windows": [{"start": "07:30", "end": "12:00"}]}}, "08:00"),
    ({"schedule": {"windows": [{"start": "09:00", "end": "21:30"}]}}, "21:00"),
    ({"schedule": {"windows": [{"start": "12:00", "end": "10:00"}]}}, "before"),
    ({"schedule": {"windows": []}}, "windows"),
    (
        {"schedule": {"start_at": "2030-01-02T00:00:00Z", "end_at": "2030-01-01T00:00:00Z"}},
        "end_at",
    ),
    ({"retry": {"max_attempts": 11}}, "max_attempts"),
    ({"retry": {"max_attempts": "3"}}, "max_attempts"),
    ({"retry": {"on": ["human"]}}, "on"),
    ({"retry": {"delay_seconds": 5}}, "delay_seconds"),
    ({"pacing": {"max_concurrent": 0}}, "max_concurrent"),
    ({"pacing": {"calls_per_minute": 6001}}, "calls_per_minute"),
    ({"pacing": {"turbo": True}}, "turbo"),
    ({"agent_id": "7a2d3b2f-9b54-4d4a-8b66-2e3f4a5b6c09"}, "agent"),
    ({"agent_branch_name": "nope"}, "branch"),
    ({"from_number": "+15550009999"}, "from_number"),
    ({"name": ""}, "name"),
]


@pytest.mark.parametrize(
    ("fields", "mentions"), BAD_BODIES, ids=[m + str(i) for i, (_, m) in enumerate(BAD_BODIES)]
)
async def test_bad_settings_are_422_naming_the_field(
    app: FastAPI, client: httpx.AsyncClient, fields: dict[str, Any], mentions: str
) -> None:
    org = await org_with_agent(app)
    body = {"name": "x", "agent_id": AGENT, **fields}
    response = await client.post("/v1/campaigns", json=body, headers=org.headers)
    error = status_error(response, 422, "")
    assert mentions in " ".join(error["errors"]), error


async def test_hostile_bodies_are_422_never_500(app: FastAPI, client: httpx.AsyncClient) -> None:
    org = await org_with_agent(app)
    for content in (b"{", b"[]", b'"x"', b"\xff\xfe", b'{"name": "\\u0000"}'):
        response = await client.post(
            "/v1/campaigns",
            content=content,
            headers={**org.headers, "Content-Type": "application/json"},
        )
        status_error(response, 422, "")
    status_error(await client.get("/v1/campaigns/nope", headers=org.headers), 422, "")
    status_error(await client.get("/v1/campaigns?page=0", headers=org.headers), 422, "page")


async def test_the_state_machine_refuses_every_other_move(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    org = await org_with_agent(app)
    campaign = await create_campaign(client, org, schedule=open_schedule())
    url = f"/v1/campaigns/{campaign['id']}"

    async def move(verb: str) -> httpx.Response:
        return await client.post(f"{url}/{verb}", headers=org.headers)

    status_error(await move("pause"), 409, "draft")
    status_error(await move("resume"), 409, "draft")
    started = await move("start")
    assert started.status_code == 200 and started.json()["campaign"]["status"] == "running"
    assert started.json()["campaign"]["started_at"] is not None
    status_error(await move("start"), 409, "running")
    status_error(await client.patch(url, json={"name": "y"}, headers=org.headers), 409, "running")
    assert (await move("pause")).json()["campaign"]["status"] == "paused"
    patched = await client.patch(
        url, json={"name": "y", "pacing": {"max_concurrent": 2}}, headers=org.headers
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["campaign"]["name"] == "y"
    assert patched.json()["campaign"]["pacing"] == {"max_concurrent": 2, "calls_per_minute": 60}
    assert (await move("resume")).json()["campaign"]["status"] == "running"
    cancelled = (await move("cancel")).json()["campaign"]
    assert cancelled["status"] == "cancelled" and cancelled["finished_at"] is not None
    for verb in ("start", "pause", "resume", "cancel"):
        status_error(await move(verb), 409, "cancelled")
    status_error(
        await client.post(
            f"{url}/start".replace(campaign["id"], "6f1c2a1e-0000-4c39-9a55-1d2f3e4a5b01"),
            headers=org.headers,
        ),
        404,
        "not found",
    )


async def test_two_concurrent_starts_one_wins(make_app: AppFactory) -> None:
    first, second = await make_app(), await make_app()
    org = await org_with_agent(first)
    async with client_for(first) as a, client_for(second) as b:
        campaign = await create_campaign(a, org)
        url = f"/v1/campaigns/{campaign['id']}/start"
        answers = await asyncio.gather(
            a.post(url, headers=org.headers), b.post(url, headers=org.headers)
        )
    assert sorted(r.status_code for r in answers) == [200, 409], [r.text for r in answers]


async def test_recipients_from_json_count_duplicates_and_report_bad_rows(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    org = await org_with_agent(app)
    campaign = await create_campaign(client, org)
    url = f"/v1/campaigns/{campaign['id']}/recipients"
    body = {
        "recipients": [
            {"phone_number": "+1 (555) 000-1000", "params": {"name": "Ann"}, "external_id": "a1"},
            {"phone_number": "not a number"},
            {"phone_number": "+15550001000"},
            {"phone_number": "+15550001001", "timezone": "Mars/Olympus"},
            {"phone_number": "+15550001002", "timezone": "Europe/Paris"},
            "oops",
            {"phone_number": "+15550001003", "surprise": 1},
        ]
    }
    response = await client.post(url, json=body, headers=org.headers)
    assert response.status_code == 201, response.text
    added = response.json()
    assert added["added"] == 2 and added["duplicates"] == 1
    assert [r["row"] for r in added["rejected"]] == [2, 4, 6, 7]
    assert "phone_number" in added["rejected"][0]["error"]
    assert "time zone" in added["rejected"][1]["error"]
    again = await client.post(url, json={"recipients": body["recipients"][:1]}, headers=org.headers)
    assert again.json() == {"added": 0, "duplicates": 1, "rejected": []}
    listed = (await client.get(url, headers=org.headers)).json()
    assert listed["total_count"] == 2
    first = listed["recipients"][0]
    assert first["phone_number"] == "+15550001000"
    assert first["params"] == {"name": "Ann"} and first["external_id"] == "a1"
    assert (first["status"], first["attempts"], first["last_outcome"]) == ("queued", 0, None)
    assert first["call_ids"] == []
    assert listed["recipients"][1]["timezone"] == "Europe/Paris"
    got = (await client.get(f"/v1/campaigns/{campaign['id']}", headers=org.headers)).json()
    assert got["campaign"]["counts"]["total"] == 2 and got["campaign"]["counts"]["queued"] == 2
    too_many = {"recipients": [{"phone_number": "+15550001000"}] * 10_001}
    status_error(await client.post(url, json=too_many, headers=org.headers), 422, "10,000")


async def test_recipients_from_csv(app: FastAPI, client: httpx.AsyncClient) -> None:
    org = await org_with_agent(app)
    campaign = await create_campaign(client, org)
    text = (
        "\ufeffphone_number;first_name;Timezone;external_id;note\r\n"
        '+15550002000;Ann;America/New_York;c-1;"two\nlines"\r\n'
        "garbage;Bob;;c-2;x\r\n"
        "\r\n"
        "+15550002001;Cy;;c-3\r\n"
        "+15550002002;Di;Mars/Olympus;c-4;x\r\n"
        "+15550002000;Ann again;;c-5;x\r\n"
        "+15550002003;Ed;;;y\r\n"
    )
    response = await add_csv(client, org, campaign["id"], text)
    assert response.status_code == 201, response.text
    added = response.json()
    assert (added["added"], added["duplicates"]) == (2, 1)
    assert [r["row"] for r in added["rejected"]] == [2, 3, 4]
    assert "fields" in added["rejected"][1]["error"]
    listed = (
        await client.get(f"/v1/campaigns/{campaign['id']}/recipients", headers=org.headers)
    ).json()["recipients"]
    assert listed[0]["params"] == {"first_name": "Ann", "note": "two\nlines"}
    assert listed[0]["timezone"] == "America/New_York" and listed[0]["external_id"] == "c-1"
    assert listed[1]["external_id"] is None and listed[1]["timezone"] is None


CSV_REFUSED = [
    (b"", "empty"),
    (b"name,first\n+15550000000,x\n", "phone_number"),
    (b"phone_number,name,name\n+15550000000,a,b\n", "twice"),
    (b"phone_number,,x\n", "empty column"),
    (b"phone_number\n\x00\x01\x02\xff", "NUL"),
    (b"phone_number\n\xff\xfe\xfa", "UTF-8"),
    (b'phone_number,name\n+15550000000,"unterminated\n', "could not be read"),
]


@pytest.mark.parametrize(("body", "mentions"), CSV_REFUSED, ids=[m for _, m in CSV_REFUSED])
async def test_unreadable_csv_is_a_clear_422(
    app: FastAPI, client: httpx.AsyncClient, body: bytes, mentions: str
) -> None:
    org = await org_with_agent(app)
    campaign = await create_campaign(client, org)
    status_error(await add_csv(client, org, campaign["id"], body), 422, mentions)


async def test_a_huge_body_is_413_and_other_types_422(make_app: AppFactory) -> None:
    app = await make_app(max_body_bytes=1000)
    org = await org_with_agent(app)
    async with client_for(app) as client:
        campaign = await create_campaign(client, org)
        text = "phone_number\n" + "+15550000000\n" * 200
        status_error(await add_csv(client, org, campaign["id"], text), 413, "exceeds")
        response = await client.post(
            f"/v1/campaigns/{campaign['id']}/recipients",
            content=b"phone_number\n+15550000000\n",
            headers={**org.headers, "Content-Type": "text/plain"},
        )
        status_error(response, 422, "text/csv")


async def test_no_recipients_join_a_finished_campaign(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    org = await org_with_agent(app)
    campaign = await create_campaign(client, org)
    await client.post(f"/v1/campaigns/{campaign['id']}/cancel", headers=org.headers)
    response = await add_csv(client, org, campaign["id"], "phone_number\n+15550000000\n")
    status_error(response, 409, "cancelled")


async def test_export_lists_every_recipient(app: FastAPI, client: httpx.AsyncClient) -> None:
    org = await org_with_agent(app)
    campaign = await create_campaign(client, org)
    await add_csv(
        client,
        org,
        campaign["id"],
        "phone_number,external_id\n+15550003000,x1\n+15550003001,=1+2\n",
    )
    response = await client.get(f"/v1/campaigns/{campaign['id']}/export", headers=org.headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert rows.pop()["external_id"] == "'=1+2"  # never a spreadsheet formula
    assert rows == [
        {
            "phone_number": "+15550003000",
            "external_id": "x1",
            "timezone": "",
            "status": "queued",
            "attempts": "0",
            "last_outcome": "",
            "last_call_id": "",
            "next_attempt_at": rows[0]["next_attempt_at"],
        }
    ]
    assert rows[0]["next_attempt_at"]


async def test_moves_send_campaign_webhooks(make_app: AppFactory) -> None:
    app = await make_app(webhook_allow_private_networks=True)
    org = await org_with_agent(app)
    async with client_for(app) as client:
        hook = await client.post(
            "/v1/webhooks",
            json={"url": "http://127.0.0.1:9/x", "events": ["campaign.started", "campaign.paused"]},
            headers=org.headers,
        )
        assert hook.status_code == 201, hook.text
        campaign = await create_campaign(client, org)
        for verb in ("start", "pause", "resume"):
            moved = await client.post(f"/v1/campaigns/{campaign['id']}/{verb}", headers=org.headers)
            assert moved.status_code == 200
    with checked():
        async with runtime_of(app).db.session(write=False) as session:
            rows = (
                await session.execute(
                    select(WebhookEvent.type, WebhookEvent.body)
                    .where(WebhookEvent.organization_id == org.id)
                    .order_by(WebhookEvent.created_at)
                )
            ).all()
    assert [t for t, _ in rows] == ["campaign.started", "campaign.paused"]
    sent = orjson.loads(rows[1][1])
    assert sent["data"]["campaign"]["id"] == campaign["id"]
    assert sent["data"]["campaign"]["status"] == "paused"
