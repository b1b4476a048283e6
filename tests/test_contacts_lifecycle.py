"""Contact data over time: revisions, expectedRevision, expiry, delete, purge, the contact list,
tenancy, concurrency and the fixture section (docs/api-contract.md)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from importlib.resources import files

import orjson
import pytest
from sqlalchemy import select, update

from callplane.contacts.purge import purge_round
from callplane.loader import LoadError
from callplane.models.contacts import Contact
from tests.conftest import client_for
from tests.factories import load, make_org, runtime_of
from tests.test_contacts import assert_status_error, url

NUMBER = "+14155550123"


async def put(client, org, identifier=NUMBER, **body):
    body.setdefault("data", {})
    return await client.put(url(identifier), headers=org.headers, json=body)


async def set_expiry(app, org, identifier: str, expires_at: datetime | None) -> None:
    """Move a record's expiry (time is controlled through the database, never slept)."""
    async with runtime_of(app).db.session(write=True) as session:
        await session.execute(
            update(Contact)
            .where(Contact.organization_id == org.id, Contact.identifier == identifier)
            .values(expires_at=expires_at)
        )
        await session.commit()


async def stored_row(app, org, identifier: str = NUMBER) -> Contact | None:
    async with runtime_of(app).db.session(write=False) as session:
        return await session.scalar(
            select(Contact).where(
                Contact.organization_id == org.id, Contact.identifier == identifier
            )
        )


def ago(seconds: float) -> datetime:
    return datetime.now(UTC) - timedelta(seconds=seconds)


# --- revisions --------------------------------------------------------------------------------


async def test_revision_starts_at_1_and_grows_by_1_on_every_put(app, client):
    org = await make_org(app)
    revisions = [(await put(client, org, data={"n": n})).json()["revision"] for n in range(5)]
    assert revisions == [1, 2, 3, 4, 5]
    # Writing the same data again is still a write.
    assert (await put(client, org, data={"n": 4})).json()["revision"] == 6


async def test_expected_revision_matching_applies_and_stale_is_409_unchanged(app, client):
    org = await make_org(app)
    await put(client, org, data={"v": 1})
    ok = await put(client, org, data={"v": 2}, expectedRevision=1)
    assert ok.status_code == 200 and ok.json()["revision"] == 2
    stale = await put(client, org, data={"v": "lost"}, expectedRevision=1, ttlSeconds=60)
    assert_status_error(stale, 409, mentions="expectedRevision")
    read = (await client.get(url(NUMBER), headers=org.headers)).json()
    assert read["data"] == {"v": 2} and read["revision"] == 2 and read["expiresAt"] is None
    ahead = await put(client, org, data={"v": "lost"}, expectedRevision=3)
    assert_status_error(ahead, 409)
    assert (await put(client, org, data={"v": 3})).json()["revision"] == 3


async def test_expected_revision_0_creates_only_when_absent(app, client):
    org = await make_org(app)
    created = await put(client, org, data={"v": 1}, expectedRevision=0)
    assert created.status_code == 200 and created.json()["revision"] == 1
    again = await put(client, org, data={"v": "lost"}, expectedRevision=0)
    assert_status_error(again, 409)
    assert (await client.get(url(NUMBER), headers=org.headers)).json()["data"] == {"v": 1}


async def test_expected_revision_on_a_missing_contact_is_409_and_creates_nothing(app, client):
    org = await make_org(app)
    assert_status_error(await put(client, org, expectedRevision=1), 409)
    assert await stored_row(app, org) is None
    assert (await client.get("/v1/contacts", headers=org.headers)).json()["total_count"] == 0


async def test_after_delete_the_stored_revision_is_0_but_the_counter_continues(app, client):
    org = await make_org(app)
    await put(client, org)
    await put(client, org)
    await client.delete(url(NUMBER), headers=org.headers)
    assert_status_error(await put(client, org, expectedRevision=2), 409)
    recreated = await put(client, org, data={"again": True}, expectedRevision=0)
    assert recreated.status_code == 200 and recreated.json()["revision"] == 3


@pytest.mark.parametrize(
    "value",
    [True, -1, 1.5, "1", [1], 2**31, 10**40],
    ids=["true", "negative", "fraction", "string", "array", "2^31", "huge"],
)
async def test_expected_revision_must_be_a_non_negative_integer(app, client, value):
    org = await make_org(app)
    await put(client, org)
    response = await put(client, org, data={"x": 1}, expectedRevision=value)
    assert_status_error(response, 422, mentions="expectedRevision")
    assert (await client.get(url(NUMBER), headers=org.headers)).json()["revision"] == 1


async def test_concurrent_puts_get_consecutive_revisions_and_the_highest_wins(make_app):
    # Two apps on one database: separate engines, so the writes race on separate connections.
    first, second = await make_app(), await make_app()
    org = await make_org(first)
    async with client_for(first) as a, client_for(second) as b:
        for _ in range(3):
            await put(a, org)
        responses = await asyncio.gather(
            *(put(a if i % 2 else b, org, data={"writer": i}) for i in range(20))
        )
        assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
        by_revision = {r.json()["revision"]: r.json()["data"] for r in responses}
        assert sorted(by_revision) == list(range(4, 24))
        read = (await a.get(url(NUMBER), headers=org.headers)).json()
    assert read["revision"] == 23
    assert read["data"] == by_revision[23]


async def test_concurrent_creates_with_expected_revision_0_let_exactly_one_win(make_app):
    first, second = await make_app(), await make_app()
    org = await make_org(first)
    async with client_for(first) as a, client_for(second) as b:
        responses = await asyncio.gather(
            *(put(a if i % 2 else b, org, data={"w": i}, expectedRevision=0) for i in range(10))
        )
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] + [409] * 9


# --- expiry -----------------------------------------------------------------------------------


async def test_expired_data_reads_as_absent_everywhere(app, client):
    org = await make_org(app)
    await put(client, org, data={"secret": 1}, ttlSeconds=60)
    await put(client, org, "sip:other", data={}, ttlSeconds=60)
    await set_expiry(app, org, NUMBER, ago(1))
    assert_status_error(await client.get(url(NUMBER), headers=org.headers), 404)
    assert_status_error(await client.delete(url(NUMBER), headers=org.headers), 404)
    listed = (await client.get("/v1/contacts", headers=org.headers)).json()
    assert [c["phoneNumber"] for c in listed["contacts"]] == ["sip:other"]
    assert listed["total_count"] == 1
    assert_status_error(await put(client, org, expectedRevision=1), 409)


async def test_a_put_after_expiry_continues_the_revision_and_drops_old_data(app, client):
    org = await make_org(app)
    await put(client, org, data={"old": 1}, ttlSeconds=60)
    await put(client, org, data={"old": 2}, ttlSeconds=60)
    await set_expiry(app, org, NUMBER, ago(1))
    response = await put(client, org, data={"new": 1})
    assert response.json()["revision"] == 3
    read = (await client.get(url(NUMBER), headers=org.headers)).json()
    assert read["data"] == {"new": 1} and read["expiresAt"] is None


async def test_ttl_seconds_is_the_remaining_time_rounded_up(app, client):
    org = await make_org(app)
    await put(client, org, ttlSeconds=3600)
    await set_expiry(app, org, NUMBER, datetime.now(UTC) + timedelta(seconds=100.9))
    read = (await client.get(url(NUMBER), headers=org.headers)).json()
    assert read["ttlSeconds"] == 101
    expires_at = datetime.fromisoformat(read["expiresAt"])
    assert abs((expires_at - datetime.now(UTC)).total_seconds() - 100.9) < 5


# --- delete -----------------------------------------------------------------------------------


async def test_delete_removes_the_data_and_keeps_the_counter(app, client):
    org = await make_org(app)
    await put(client, org, data={"a": 1})
    await put(client, org, data={"a": 2})
    response = await client.delete(url("(415) 555-0123"), headers=org.headers)
    assert response.status_code == 200 and response.json() == {"success": True}
    assert_status_error(await client.get(url(NUMBER), headers=org.headers), 404)
    assert_status_error(await client.delete(url(NUMBER), headers=org.headers), 404)
    assert (await client.get("/v1/contacts", headers=org.headers)).json()["contacts"] == []
    row = await stored_row(app, org)
    assert row is not None and row.data is None and row.revision == 2
    assert (await put(client, org, data={"b": 1})).json()["revision"] == 3


# --- purge ------------------------------------------------------------------------------------


async def test_purge_clears_only_expired_data_in_batches_and_keeps_revisions(app, client):
    org = await make_org(app)
    other = await make_org(app, "Other")
    expired = [f"sip:expired-{i}" for i in range(7)]
    for identifier in expired:
        await put(client, org, identifier, data={"x": 1}, ttlSeconds=60)
        await set_expiry(app, org, identifier, ago(5))
    await put(client, org, "sip:live", ttlSeconds=60)
    await put(client, org, "sip:forever")
    await put(client, other, "sip:expired-0", ttlSeconds=60)

    assert await purge_round(runtime_of(app).db, batch_size=3) == 7
    for identifier in expired:
        row = await stored_row(app, org, identifier)
        assert row is not None and row.data is None and row.expires_at is None
        assert row.revision == 1
    for owner, identifier in ((org, "sip:live"), (org, "sip:forever"), (other, "sip:expired-0")):
        assert (await client.get(url(identifier), headers=owner.headers)).status_code == 200
    assert await purge_round(runtime_of(app).db, batch_size=3) == 0  # idempotent
    assert (await put(client, org, "sip:expired-3")).json()["revision"] == 2


async def test_concurrent_purges_clear_each_record_once(make_app):
    first, second = await make_app(), await make_app()
    org = await make_org(first)
    async with client_for(first) as client:
        for i in range(12):
            await put(client, org, f"sip:{i}", ttlSeconds=60)
            await set_expiry(first, org, f"sip:{i}", ago(5))
    counts = await asyncio.gather(
        purge_round(runtime_of(first).db, batch_size=2),
        purge_round(runtime_of(second).db, batch_size=2),
    )
    assert sum(counts) == 12


async def test_the_app_runs_the_purge_periodically(make_app):
    app = await make_app(contact_purge_interval_seconds=0.05)
    org = await make_org(app)
    async with client_for(app) as client:
        await put(client, org, ttlSeconds=60)
    await set_expiry(app, org, NUMBER, ago(1))
    for _ in range(200):  # wait for the background loop, up to ~10 s
        row = await stored_row(app, org)
        if row is not None and row.data is None:
            break
        await asyncio.sleep(0.05)
    assert row is not None and row.data is None and row.revision == 1


# --- the contact list -------------------------------------------------------------------------


async def test_list_contacts_pages_in_creation_order(app, client):
    org = await make_org(app)
    identifiers = ["sip:c", "+442071838750", "sip:a", NUMBER, "sip:b"]
    for identifier in identifiers:
        await put(client, org, identifier)
    await put(client, org, "sip:c", data={"updated": True}, ttlSeconds=600)  # does not move it
    first = await client.get("/v1/contacts?page_size=2", headers=org.headers)
    assert first.status_code == 200
    body = first.json()
    assert set(body) == {"contacts", "total_count", "page", "page_size", "total_pages"}
    assert (body["total_count"], body["page"], body["page_size"], body["total_pages"]) == (
        5,
        1,
        2,
        3,
    )
    assert [c["phoneNumber"] for c in body["contacts"]] == identifiers[:2]
    contact = body["contacts"][0]
    assert set(contact) == {"phoneNumber", "revision", "expiresAt", "created_at", "updated_at"}
    assert contact["revision"] == 2 and contact["expiresAt"].endswith("Z")
    assert contact["updated_at"] > contact["created_at"]
    pages = [
        (await client.get(f"/v1/contacts?page={p}&page_size=2", headers=org.headers)).json()
        for p in (2, 3, 4)
    ]
    assert [c["phoneNumber"] for p in pages for c in p["contacts"]] == identifiers[2:]
    assert pages[2]["contacts"] == [] and pages[2]["total_count"] == 5


async def test_list_contacts_defaults(app, client):
    org = await make_org(app)
    for i in range(25):
        await put(client, org, f"sip:{i:02}")
    body = (await client.get("/v1/contacts", headers=org.headers)).json()
    assert (body["page"], body["page_size"], body["total_pages"]) == (1, 20, 2)
    assert len(body["contacts"]) == 20


@pytest.mark.parametrize(
    "query",
    [
        "page=0",
        "page=-1",
        "page=abc",
        "page=1.5",
        "page=99999999999999999999",
        "page_size=0",
        "page_size=101",
        "page_size=x",
        "page=1%3BDROP%20TABLE%20contacts",
    ],
)
async def test_list_contacts_rejects_bad_paging_in_the_status_shape(app, client, query):
    org = await make_org(app)
    response = await client.get(f"/v1/contacts?{query}", headers=org.headers)
    assert_status_error(response, 422, mentions=query.split("=")[0])


# --- tenancy ----------------------------------------------------------------------------------


async def test_organizations_never_see_each_others_contact_data(app, client):
    acme, globex = await make_org(app, "Acme"), await make_org(app, "Globex")
    await put(client, acme, data={"owner": "acme"}, ttlSeconds=600)
    await put(client, acme, data={"owner": "acme"})
    response = await put(client, globex, data={"owner": "globex"})
    assert response.json()["revision"] == 1  # a separate counter
    await put(client, acme, "sip:acme-only", data={"owner": "acme"})

    assert (await client.get(url(NUMBER), headers=acme.headers)).json()["data"]["owner"] == "acme"
    assert (await client.get(url(NUMBER), headers=globex.headers)).json()["data"] == {
        "owner": "globex"
    }
    missing = await client.get(url("sip:acme-only"), headers=globex.headers)
    unknown = await client.get(url("sip:nobody"), headers=globex.headers)
    assert_status_error(missing, 404)
    assert missing.json() == unknown.json()
    assert_status_error(await client.delete(url("sip:acme-only"), headers=globex.headers), 404)
    assert_status_error(await put(client, globex, "sip:acme-only", expectedRevision=1), 409)
    assert (await client.get(url("sip:acme-only"), headers=acme.headers)).status_code == 200
    listed = (await client.get("/v1/contacts", headers=globex.headers)).json()
    assert [c["phoneNumber"] for c in listed["contacts"]] == [NUMBER]


# --- fixture section and demo data ------------------------------------------------------------


async def test_fixture_section_loads_contacts_like_puts(app, client):
    org = await make_org(app)
    created = await load(
        app,
        org,
        {
            "contacts": [
                {"phoneNumber": "(415) 555-0123", "data": {"a": 1}},
                {"phoneNumber": "sip:alice@example.com", "data": {"b": 2}, "ttlSeconds": 3600},
                {"phoneNumber": "+1 415 555 0123", "data": {"a": 2}},
            ]
        },
    )
    assert created["contacts"] == [NUMBER, "sip:alice@example.com", NUMBER]
    read = (await client.get(url(NUMBER), headers=org.headers)).json()
    assert read["data"] == {"a": 2} and read["revision"] == 2
    alice = (await client.get(url("sip:alice@example.com"), headers=org.headers)).json()
    assert 3590 <= alice["ttlSeconds"] <= 3600


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"phoneNumber": "123", "data": {}}, "contacts[1].phoneNumber"),
        ({"phoneNumber": "sip:x", "data": []}, "contacts[1].data"),
        ({"phoneNumber": "sip:x", "data": {}, "ttlSeconds": 59}, "contacts[1].ttlSeconds"),
        ({"phoneNumber": "sip:x"}, "contacts[1].data"),
        ({"phoneNumber": "sip:x", "data": {}, "revision": 4}, "contacts[1].revision"),
    ],
)
async def test_an_invalid_fixture_item_loads_nothing(app, client, item, message):
    org = await make_org(app)
    document = {"contacts": [{"phoneNumber": "sip:ok", "data": {}}, item]}
    with pytest.raises(LoadError) as raised:
        await load(app, org, document)
    assert message in raised.value.message
    assert (await client.get("/v1/contacts", headers=org.headers)).json()["total_count"] == 0


async def test_demo_contacts_load_and_serve_the_readme_examples(app, client):
    org = await make_org(app)
    document = orjson.loads(files("callplane.demo").joinpath("contacts.json").read_bytes())
    assert set(document) == {"contacts"}
    await load(app, org, document)
    read = await client.get("/v1/contacts/%2B14155550199/data", headers=org.headers)
    assert read.status_code == 200 and read.json()["data"]["name"] == "Dana Whitfield"
    sip = await client.get("/v1/contacts/sip:alice@example.com/data", headers=org.headers)
    assert sip.status_code == 200
    listed = (await client.get("/v1/contacts", headers=org.headers)).json()
    assert listed["total_count"] == len(document["contacts"])
