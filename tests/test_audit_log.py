"""The audit log (docs/privacy.md): every change through the API is an event in the same
transaction, pending until it is sealed into its organization's hash chain just after;
GET /audit_log filters it; ``callplane audit verify`` finds a changed or deleted event."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import sqlalchemy as sa

from callplane.audit.chain import FIELDS, Event, append, utc_text
from callplane.audit.seal import seal
from callplane.audit.verify import verify
from callplane.kit.tenancy import delete_owned, select_owned, update_owned
from callplane.models.audit import AuditEvent, AuditHead, AuditPending
from callplane.models.base import utcnow
from tests.api_keys_support import scoped_key
from tests.conftest import BACKEND
from tests.factories import make_org, runtime_of
from tests.test_cli import callplane, ok_json

LOG = "/v1/audit_log"
AGENT = {"name": "Front desk", "config": {"prompt": "Be brief."}}


async def test_a_change_and_its_event_are_committed_together(app, client):
    org = await make_org(app)
    created = await client.post("/v1/agents", headers=org.headers, json=AGENT)
    assert created.status_code == 201
    agent_id = created.json()["agent"]["id"]
    renamed = await client.patch(
        f"/v1/agents/{agent_id}",
        headers={**org.headers, "X-Request-Id": "req-42"},
        json={"name": "B"},
    )
    assert renamed.status_code == 200
    # A refused change (422, 404) leaves no event: its transaction was rolled back.
    assert (
        await client.patch(f"/v1/agents/{agent_id}", headers=org.headers, json={})
    ).status_code == 422
    missing = "00000000-0000-4000-8000-000000000000"
    assert (await client.delete(f"/v1/agents/{missing}", headers=org.headers)).status_code == 404
    # Reads of agents are not audited.
    assert (await client.get("/v1/agents", headers=org.headers)).status_code == 200

    log = (await client.get(LOG, headers=org.headers)).json()
    assert log["total_count"] == 2
    newest, first = log["events"]
    assert first["id"] == 1 and newest["id"] == 2
    assert first["action"] == "agents.create_agent"
    assert first["resource_type"] == "agents"
    assert first["resource_id"] == agent_id
    assert first["actor"] == f"api_key:{org.key_id}"
    assert newest["action"] == "agents.rename_agent"
    assert newest["resource_id"] == agent_id
    assert newest["request_id"] == "req-42"
    assert newest["ip"] == "127.0.0.1"
    assert len(newest["hash"]) == 64 and newest["hash"] != first["hash"]


async def test_filters_and_pages(app, client):
    org, other = await make_org(app), await make_org(app, "Other")
    for i in range(3):
        await client.post("/v1/agents", headers=org.headers, json={**AGENT, "name": f"A{i}"})
    await client.post("/v1/agents", headers=other.headers, json=AGENT)
    reader = await scoped_key(app, org, ["audit:read"])
    headers = {"Authorization": f"Bearer {reader}"}

    page = (await client.get(LOG, headers=headers, params={"page_size": 2, "page": 2})).json()
    assert page["total_count"] == 3 and page["total_pages"] == 2
    assert [e["id"] for e in page["events"]] == [1]
    mine = (
        await client.get(LOG, headers=headers, params={"actor": f"api_key:{org.key_id}"})
    ).json()
    assert mine["total_count"] == 3
    none = (
        await client.get(LOG, headers=headers, params={"action": "agents.archive_agent"})
    ).json()
    assert none["total_count"] == 0
    later = (
        await client.get(LOG, headers=headers, params={"since": "2999-01-01T00:00:00Z"})
    ).json()
    assert later["events"] == []
    earlier = (
        await client.get(LOG, headers=headers, params={"until": "2999-01-01T00:00:00Z"})
    ).json()
    assert earlier["total_count"] == 3
    for bad in ({"since": "yesterday"}, {"page": 0}, {"page_size": 101}, {"actor": ""}):
        response = await client.get(LOG, headers=headers, params=bad)
        assert response.status_code == 422, bad
        assert response.json()["status"] == "error"
    # The other organization's chain is its own.
    theirs = (await client.get(LOG, headers=other.headers)).json()
    assert [e["id"] for e in theirs["events"]] == [1]
    no_scope = await scoped_key(app, org, ["agents:read"])
    refused = await client.get(LOG, headers={"Authorization": f"Bearer {no_scope}"})
    assert refused.status_code == 403 and "audit:read" in refused.json()["error"]


async def _orders_record(client, org) -> str:
    """A custom-data table ``orders`` of the organization, with one record: its id."""
    table = {"name": "orders", "columns": [{"name": "note", "type": "TEXT"}]}
    assert (
        await client.post("/v1/data/tables", headers=org.headers, json=table)
    ).status_code == 201
    rows = await client.post(
        "/v1/data/orders", headers=org.headers, json={"records": [{"note": "a"}]}
    )
    return str(rows.json()["records"][0]["id"])


async def test_the_fast_path_patch_is_audited_in_its_own_transaction(app, client):
    org = await make_org(app)
    record_id = await _orders_record(client, org)
    for note in ("b", "c"):
        patched = await client.patch(
            f"/v1/data/orders/{record_id}", headers=org.headers, json={"note": note}
        )
        assert patched.status_code == 200
    log = (
        await client.get(LOG, headers=org.headers, params={"action": "custom_data.patch_record"})
    ).json()
    assert log["total_count"] == 2
    assert {e["resource_id"] for e in log["events"]} == {f"orders/{record_id}"}


async def _pending(app, organization_id: int) -> int:
    async with runtime_of(app).db.session(write=False) as session:
        query = select_owned(AuditPending, organization_id, sa.func.count())
        return int(await session.scalar(query) or 0)


async def _chain(app, organization_id: int) -> tuple[list[int], int | None, int]:
    """The organization's event numbers in order, and what verify says (first break, count)."""
    async with runtime_of(app).db.session(write=False) as session:
        seqs = (
            await session.scalars(
                select_owned(AuditEvent, organization_id, AuditEvent.seq).order_by(AuditEvent.seq)
            )
        ).all()
        checked = await verify(session, organization_id)
    broken = checked.first_break
    return list(seqs), None if broken is None else broken.seq, checked.events


async def test_concurrent_changes_then_one_seal_give_one_chain(app, client):
    """Writers through the session (agents) and through transactions of their own (the
    custom-data fast path's PATCH) write at once, unsealed; one seal numbers them all once, in
    one chain that verifies."""
    org = await make_org(app)
    table = {"name": "tallies", "columns": [{"name": "n", "type": "INTEGER"}]}
    assert (
        await client.post("/v1/data/tables", headers=org.headers, json=table)
    ).status_code == 201
    rows = await client.post(
        "/v1/data/tallies", headers=org.headers, json={"records": [{"n": 0}, {"n": 0}]}
    )
    ids = [r["id"] for r in rows.json()["records"]]
    answers = await asyncio.gather(
        *(
            client.post("/v1/agents", headers=org.headers, json={**AGENT, "name": f"N{i}"})
            for i in range(8)
        ),
        *(
            client.patch(f"/v1/data/tallies/{ids[i % 2]}", headers=org.headers, json={"n": i})
            for i in range(16)
        ),
    )
    assert [a.status_code for a in answers] == [201] * 8 + [200] * 16
    # The table, its rows, 8 agents and 16 patches: written, none sealed yet.
    assert await _pending(app, org.id) == 26
    assert (await _chain(app, org.id))[0] == []
    assert await seal(runtime_of(app).db, org.id) == 26
    assert await _pending(app, org.id) == 0
    seqs, broken, checked = await _chain(app, org.id)
    assert seqs == list(range(1, 27))
    assert broken is None and checked == 26
    assert await seal(runtime_of(app).db) == 0  # nothing left: sealing again seals nothing


async def test_concurrent_seals_and_writers_never_fork_the_chain(app, client):
    """Sealers side by side (as several workers are), while writers keep writing: every event
    is sealed once, numbered 1..N in one chain, whichever sealer got it."""
    db = runtime_of(app).db
    org = await make_org(app)
    for i in range(6):
        await client.post("/v1/agents", headers=org.headers, json={**AGENT, "name": f"S{i}"})
    answers = await asyncio.gather(
        seal(db),
        seal(db, org.id),
        *(
            client.post("/v1/agents", headers=org.headers, json={**AGENT, "name": f"W{i}"})
            for i in range(6)
        ),
        seal(db, org.id),
    )
    assert [a.status_code for a in answers[2:8]] == [201] * 6
    sealed_by_them = answers[0] + answers[1] + answers[8]
    sealed_after = await asyncio.gather(seal(db), seal(db, org.id))
    assert sealed_by_them + sum(sealed_after) == 12
    seqs, broken, checked = await _chain(app, org.id)
    assert sorted(seqs) == list(range(1, 13))
    assert broken is None and checked == 12
    async with db.session(write=False) as session:
        head = await session.scalar(select_owned(AuditHead, org.id))
    assert head is not None and head.seq == 12


@pytest.mark.skipif(BACKEND != "postgresql", reason="SQLite has one writer at a time")
async def test_an_event_committed_late_is_sealed_later_with_a_later_number(app):
    """On PostgreSQL ids are handed out at insert, not at commit: a lower pending id committed
    after a higher one was sealed gets the next number, and the chain still verifies."""
    db = runtime_of(app).db
    org = await make_org(app)

    def event(action: str) -> Event:
        return Event(org.id, utcnow(), "system", action, "test")

    async with db.session(write=True) as slow:
        await append(slow, event("late"))  # the lower id, not committed yet
        async with db.session(write=True) as quick:
            await append(quick, event("early"))
            await quick.commit()
        assert await seal(db, org.id) == 1
        await slow.commit()
    assert await seal(db, org.id) == 1
    async with db.session(write=False) as session:
        chain = (
            await session.execute(
                select_owned(AuditEvent, org.id, AuditEvent.action, AuditEvent.seq).order_by(
                    AuditEvent.seq
                )
            )
        ).all()
    assert [tuple(row) for row in chain] == [("early", 1), ("late", 2)]
    _, broken, checked = await _chain(app, org.id)
    assert broken is None and checked == 2


async def test_the_log_shows_events_just_written_sealed(app, client):
    org = await make_org(app)
    for i in range(3):
        await client.post("/v1/agents", headers=org.headers, json={**AGENT, "name": f"J{i}"})
    events = (await client.get(LOG, headers=org.headers)).json()["events"]
    assert [e["id"] for e in events] == [3, 2, 1]
    assert all(e["hash"] is not None and len(e["hash"]) == 64 for e in events)


async def _changes(app, client, count: int = 4, sealed: bool = True):
    org = await make_org(app)
    for i in range(count):
        await client.post("/v1/agents", headers=org.headers, json={**AGENT, "name": f"V{i}"})
    if sealed:
        assert await seal(runtime_of(app).db, org.id) == count
    return org


async def test_verify_seals_what_was_written_since(app, client, database_url):
    await _changes(app, client, sealed=False)
    result = ok_json(callplane(database_url, "audit", "verify", "--json"))
    assert result == {"ok": True, "organizations": 1, "events": 4, "first_break": None}


async def test_an_event_deleted_before_it_is_sealed_goes_unseen(app, client, database_url):
    """What sealing after the commit gives up (docs/privacy.md): an event removed while it is
    pending, before it has a hash, leaves no gap to find."""
    org = await _changes(app, client, sealed=False)
    async with runtime_of(app).db.session(write=True) as session:
        first = await session.scalar(
            select_owned(AuditPending, org.id, sa.func.min(AuditPending.id))
        )
        await session.execute(delete_owned(AuditPending, org.id).where(AuditPending.id == first))
        await session.commit()
    result = ok_json(callplane(database_url, "audit", "verify", "--json"))
    assert result == {"ok": True, "organizations": 1, "events": 3, "first_break": None}


async def test_verify_names_a_tampered_event(app, client, database_url):
    org = await _changes(app, client)
    async with runtime_of(app).db.session(write=True) as session:
        await session.execute(
            update_owned(AuditEvent, org.id)
            .where(AuditEvent.seq == 2)
            .values(actor="user:nobody@x")
        )
        await session.commit()
    result = callplane(database_url, "audit", "verify")
    assert result.returncode == 1
    assert "organization 1: event 2 does not fit" in result.stderr


async def test_verify_names_a_deleted_event(app, client, database_url):
    org = await _changes(app, client)
    async with runtime_of(app).db.session(write=True) as session:
        await session.execute(delete_owned(AuditEvent, org.id).where(AuditEvent.seq == 3))
        await session.commit()
    result = callplane(database_url, "audit", "verify", "--json")
    assert result.returncode == 1
    assert '"event_id":3' in result.stdout and "is missing" in result.stdout


async def test_verify_names_an_event_deleted_from_the_end(app, client, database_url):
    org = await _changes(app, client)
    async with runtime_of(app).db.session(write=True) as session:
        await session.execute(delete_owned(AuditEvent, org.id).where(AuditEvent.seq == 4))
        await session.commit()
    result = callplane(database_url, "audit", "verify")
    assert result.returncode == 1
    assert "event 4 is missing" in result.stderr
    async with runtime_of(app).db.session(write=False) as session:
        head = await session.scalar(select_owned(AuditHead, org.id))
        assert head is not None and head.seq == 4
        assert await session.scalar(sa.select(sa.literal(1))) == 1


async def test_no_change_is_committed_without_its_event(app, client, monkeypatch):
    """The event is appended in the change's own transaction: when it cannot be written, the
    change is rolled back with it."""
    from callplane.audit import requests

    org = await make_org(app)

    async def refuse(*_args, **_kwargs):
        raise RuntimeError("the audit log is unwritable")

    monkeypatch.setattr(requests, "append", refuse)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        response = await c.post("/v1/agents", headers=org.headers, json=AGENT)
    assert response.status_code == 500
    monkeypatch.undo()
    listed = (await client.get("/v1/agents", headers=org.headers)).json()
    assert listed["agents"] == []
    assert (await client.get(LOG, headers=org.headers)).json()["total_count"] == 0


async def test_recording_and_contact_data_reads_are_audited(app, client):
    from tests.test_recordings import signed_url

    org = await make_org(app)
    url = await signed_url(app, client, org)
    assert (await client.get(url)).status_code == 200
    # An altered URL reads nothing and records nothing.
    assert (await client.get(url.replace("signature=", "signature=0"))).status_code == 403

    path = "/v1/contacts/%2B14155550100/data"
    assert (
        await client.put(path, headers=org.headers, json={"data": {"plan": "gold"}})
    ).status_code == 200
    assert (await client.get(path, headers=org.headers)).status_code == 200
    assert (await client.get("/v1/contacts", headers=org.headers)).status_code == 200
    # An unknown contact is a 404: nothing was read.
    assert (
        await client.get("/v1/contacts/%2B14155550199/data", headers=org.headers)
    ).status_code == 404

    events = (await client.get(LOG, headers=org.headers)).json()["events"]
    actions = [(e["action"], e["actor"]) for e in reversed(events)]
    key = f"api_key:{org.key_id}"
    assert actions == [
        ("recordings.read", "signed_url"),
        ("contacts.put_contact_data", key),
        ("contacts.read_data", key),
        ("contacts.list", key),
    ]
    assert events[1]["resource_id"] == "+14155550100"


async def test_workers_seal_side_by_side(app, client):
    """Two workers' audit-seal steps at once seal every event once (``audit_log.task``)."""
    from callplane.audit_log.task import seal_step
    from callplane.engine.runner import TaskRunner

    org = await make_org(app)
    for i in range(5):
        await client.post("/v1/agents", headers=org.headers, json={**AGENT, "name": f"K{i}"})
    workers = [TaskRunner(runtime_of(app)), TaskRunner(runtime_of(app))]
    assert await asyncio.gather(*(seal_step(w) for w in workers)) == [False, False]
    seqs, broken, checked = await _chain(app, org.id)
    assert seqs == [1, 2, 3, 4, 5]
    assert broken is None and checked == 5


async def test_a_fast_path_change_is_rolled_back_when_its_event_is_refused_at_commit(app, client):
    """The fast path's event goes with its COMMIT on PostgreSQL: when the database refuses the
    event, the change is not committed either, and the connection serves the next request."""
    org = await make_org(app)
    record = f"/v1/data/orders/{await _orders_record(client, org)}"
    assert (await client.patch(record, headers=org.headers, json={"note": "b"})).status_code == 200
    refuse, allow = _refusal("custom_data.patch_record")
    db = runtime_of(app).db
    async with db.session(write=True) as session:
        for statement in refuse:
            await session.execute(sa.text(statement))
        await session.commit()
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        refused = await c.patch(record, headers=org.headers, json={"note": "c"})
    assert refused.status_code == 500
    async with db.session(write=True) as session:
        await session.execute(sa.text(allow))
        await session.commit()
    assert (await client.get(record, headers=org.headers)).json()["record"]["note"] == "b"
    assert (await client.patch(record, headers=org.headers, json={"note": "d"})).status_code == 200
    assert (await client.get(record, headers=org.headers)).json()["record"]["note"] == "d"
    log = (
        await client.get(LOG, headers=org.headers, params={"action": "custom_data.patch_record"})
    ).json()
    assert log["total_count"] == 2


def _refusal(action: str) -> tuple[list[str], str]:
    """Statements that make the database refuse events of ``action``, and the one undoing it."""
    if BACKEND == "postgresql":
        check = f"ALTER TABLE audit_pending ADD CONSTRAINT refuse CHECK (action <> '{action}')"
        return [check + " NOT VALID"], "ALTER TABLE audit_pending DROP CONSTRAINT refuse"
    trigger = (
        "CREATE TRIGGER refuse BEFORE INSERT ON audit_pending "
        f"WHEN NEW.action = '{action}' BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    return [trigger], "DROP TRIGGER refuse"


@pytest.mark.parametrize("own", [True, False], ids=["own transaction", "session"])
async def test_an_event_is_stored_as_written_whatever_its_text(app, own):
    """Quotes, backslashes, placeholders, percent signs and any script are stored as they were
    written (on PostgreSQL's fast path they are written into the SQL sent with the COMMIT);
    a NUL, which PostgreSQL text cannot hold, becomes U+FFFD on both databases."""
    org = await make_org(app)
    runtime = runtime_of(app)
    hostile = "o'brien\\'; DROP TABLE audit_events; -- $1 $$ %s %(x)s ☃ \U0001f600 e\u0301"
    event = Event(org.id, utcnow(), "user:o'brien@example.com", "test.write", "test", hostile)
    with_nul = Event(org.id, utcnow(), "system", "test.nul", "test", "a\x00b")
    pool = runtime.own_transactions
    if own and pool is not None:
        connection = await pool.begin(write=True)
        await append(connection, event)
        await append(connection, with_nul)
        await pool.end(connection, commit=True)
    else:
        async with runtime.db.session(write=True) as session:
            await append(session, event)
            await append(session, with_nul)
            await session.commit()
    assert await seal(runtime.db, org.id) == 2
    async with runtime.db.session(write=False) as session:
        stored = (
            await session.execute(
                select_owned(AuditEvent, org.id, AuditEvent.actor, AuditEvent.resource_id).order_by(
                    AuditEvent.seq
                )
            )
        ).all()
    assert [tuple(row) for row in stored] == [
        ("user:o'brien@example.com", hostile),
        ("system", "a\ufffdb"),
    ]
    _, broken, checked = await _chain(app, org.id)
    assert broken is None and checked == 2


async def test_an_event_is_stored_and_sealed_field_for_field_at_its_moment(app):
    """Every field lands in its own column through writing and sealing (SQLite hands both the
    driver its rows as they are), and a moment is stored as itself whatever zone it came in,
    with or without microseconds; the chain verifies."""
    from datetime import timezone

    org = await make_org(app)
    runtime = runtime_of(app)
    moment = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC)
    written = [
        Event(org.id, moment, "api_key:1", "a.one", "type1", "r/1", "10.0.0.1", "req_1"),
        Event(
            org.id,
            moment.astimezone(timezone(timedelta(hours=5, minutes=30))).replace(microsecond=7),
            "user:u@example.com",
            "a.two",
            "type2",
            None,
            "::1",
            None,
        ),
        Event(org.id, datetime(2026, 1, 2, 3, 4, 5, 600), "system", "a.three", "type3"),
    ]
    async with runtime.db.session(write=True) as session:
        for event in written:
            await append(session, event)
        await session.commit()
    assert await seal(runtime.db, org.id) == 3
    columns = [getattr(AuditEvent, name) for name in FIELDS]
    async with runtime.db.session(write=False) as session:
        stored = (
            await session.execute(
                select_owned(AuditEvent, org.id, *columns).order_by(AuditEvent.seq)
            )
        ).all()
    expected = [
        (e.organization_id, e.at if e.at.tzinfo else e.at.replace(tzinfo=UTC), e.actor, e.action)
        + (e.resource_type, e.resource_id, e.ip, e.request_id)
        for e in written
    ]
    assert [tuple(row) for row in stored] == expected
    assert stored[1][1] == moment.replace(microsecond=7)
    _, broken, checked = await _chain(app, org.id)
    assert broken is None and checked == 3


async def test_sealing_drops_the_pending_events_of_an_organization_gone(app, client):
    """``audit_pending`` has no foreign key: events of an organization deleted before they were
    sealed are dropped by the next seal, which seals everyone else's as usual."""
    from callplane.models.orgs import Organization

    runtime = runtime_of(app)
    gone, kept = await make_org(app, "Gone"), await make_org(app, "Kept")
    for org in (gone, kept):
        assert (await client.post("/v1/agents", headers=org.headers, json=AGENT)).status_code == 201
    async with runtime.db.session(write=True) as session:
        await session.execute(sa.delete(Organization).where(Organization.id == gone.id))
        await session.commit()
    assert await _pending(app, gone.id) == 1
    assert await seal(runtime.db) == 1
    assert await _pending(app, gone.id) == 0
    seqs, broken, _ = await _chain(app, kept.id)
    assert seqs == [1] and broken is None


async def test_an_organizations_sealed_events_go_with_it(app, client):
    """``audit_events`` has no foreign key either: a trigger removes an organization's events
    when the organization is deleted (its id may be given again on SQLite, and the new
    organization's chain must start empty)."""
    from callplane.models.orgs import Organization

    runtime = runtime_of(app)
    gone, kept = await make_org(app, "Gone"), await make_org(app, "Kept")
    for org in (gone, kept):
        assert (await client.post("/v1/agents", headers=org.headers, json=AGENT)).status_code == 201
    assert await seal(runtime.db) == 2
    async with runtime.db.session(write=True) as session:
        await session.execute(sa.delete(Organization).where(Organization.id == gone.id))
        await session.commit()
    assert (await _chain(app, gone.id))[0] == []
    seqs, broken, _ = await _chain(app, kept.id)
    assert seqs == [1] and broken is None


async def test_an_events_hash_is_the_documented_sha256(app, client):
    """The hash is SHA-256 over the previous hash, the number and the JSON body exactly as
    docs/privacy.md writes them, computed here apart from the code that seals."""
    import hashlib
    import json

    org = await make_org(app)
    for name in ("One", "Two"):
        assert (
            await client.post("/v1/agents", headers=org.headers, json={**AGENT, "name": name})
        ).status_code == 201
    events = list(reversed((await client.get(LOG, headers=org.headers)).json()["events"]))
    previous = "0" * 64
    for number, event in enumerate(events, start=1):
        async with runtime_of(app).db.session(write=False) as session:
            stored = await session.scalar(
                select_owned(AuditEvent, org.id).where(AuditEvent.seq == number)
            )
        assert stored is not None and stored.at.utcoffset() == timedelta(0)
        body = [
            org.id,
            stored.at.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"),
            event["actor"],
            event["action"],
            event["resource_type"],
            event["resource_id"],
            event["ip"],
            event["request_id"],
        ]
        text = previous + str(number) + json.dumps(body, separators=(",", ":"), ensure_ascii=False)
        assert event["hash"] == hashlib.sha256(text.encode()).hexdigest()
        previous = event["hash"]


@pytest.mark.skipif(BACKEND != "postgresql", reason="PostgreSQL's pool of own transactions")
async def test_a_connection_released_inside_its_transaction_is_rolled_back(app):
    """The pool's own reset (no query per release) still ends a transaction left open, so the
    next request never runs inside it."""
    runtime = runtime_of(app)
    org = await make_org(app)
    pool = runtime.own_transactions
    assert pool is not None
    left_open = await pool.begin(write=True)
    await append(left_open, Event(org.id, utcnow(), "system", "test.left_open", "test"))
    conn = left_open._conn  # type: ignore[attr-defined]
    await conn.execute(
        "INSERT INTO audit_pending (organization_id, at, actor, action, "
        "resource_type) VALUES ($1, now(), 'system', 'test.inside', 'test')",
        org.id,
    )
    assert conn.is_in_transaction()
    await pool._pool.release(conn)  # type: ignore[union-attr]  # as a cancelled request would
    # The pool's only connection serves the next transaction: had the abandoned one stayed
    # open, this COMMIT would commit its insert.
    again = await pool.begin(write=True)
    await pool.end(again, commit=True)
    assert await _pending(app, org.id) == 0


@pytest.mark.skipif(BACKEND != "postgresql", reason="PostgreSQL's pool of own transactions")
async def test_an_event_goes_with_the_commit_as_a_statement_prepared_on_the_connection(app):
    """The server parses and plans the pending insert once per connection, not per event: the
    COMMIT carries EXECUTE of the statement the pool prepared when it opened the connection."""
    runtime = runtime_of(app)
    org = await make_org(app)
    pool = runtime.own_transactions
    assert pool is not None
    transaction = await pool.begin(write=True)
    await append(transaction, Event(org.id, utcnow(), "system", "test.prepared", "test", "x'y"))
    sent = transaction.at_commit  # type: ignore[attr-defined]
    assert len(sent) == 1 and sent[0].startswith("EXECUTE callplane_audit_record(")
    prepared = await transaction._conn.fetchval(  # type: ignore[attr-defined]
        "SELECT count(*) FROM pg_prepared_statements WHERE name = 'callplane_audit_record'"
    )
    assert prepared == 1
    await pool.end(transaction, commit=True)
    assert await _pending(app, org.id) == 1
    await seal(runtime.db, org.id)
    async with runtime.db.session(write=False) as session:
        stored = await session.scalar(
            select_owned(AuditEvent, org.id, AuditEvent.resource_id).where(
                AuditEvent.action == "test.prepared"
            )
        )
    assert stored == "x'y"


@pytest.mark.parametrize(
    "stored",
    ["2026-11-28 02:54:00.000000", "2026-11-28 02:54:00.123456", "1999-12-31 23:59:59.999999"],
)
def test_a_timestamp_as_sqlite_stores_it_is_hashed_as_the_moment_itself(stored):
    """Sealing reads SQLite's text; verify reads the moment: both must hash the same body."""
    moment = datetime.fromisoformat(stored).replace(tzinfo=UTC)
    assert utc_text(stored) == utc_text(moment) == moment.isoformat(timespec="microseconds")


_RUNS_APART = [1, 2, 3, 16383, 16384, 16385, 40000, 40001]  # three runs of the resource index
_ABOUT_R1 = {2, 16383, 16384, 40001}


async def _events_across_runs(app, org) -> None:
    """Events numbered across runs of the resource filter's index, written as sealing would
    leave them (hashes aside: the filter does not read them)."""
    runtime = runtime_of(app)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    async with runtime.db.session(write=True) as session:
        await session.execute(
            sa.insert(AuditEvent),
            [
                {
                    "organization_id": org.id,
                    "seq": seq,
                    "at": at + timedelta(seconds=seq),
                    "actor": "system" if seq == 16384 else f"api_key:{org.key_id}",
                    "action": "data.update_record",
                    "resource_type": "data",
                    "resource_id": "orders/1" if seq in _ABOUT_R1 else "orders/2",
                    "hash": "0" * 64,
                }
                for seq in _RUNS_APART
            ],
        )
        await session.execute(delete_owned(AuditHead, org.id))
        await session.execute(
            sa.insert(AuditHead).values(organization_id=org.id, seq=40001, hash="0" * 64)
        )
        await session.commit()


async def test_the_resource_filter_reads_every_run_newest_first(app, client):
    org = await make_org(app)
    await _events_across_runs(app, org)

    async def ids(**params: object) -> tuple[int, list[int]]:
        answer = await client.get(LOG, headers=org.headers, params=params)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        return body["total_count"], [event["id"] for event in body["events"]]

    assert await ids(resource_id="orders/1") == (4, [40001, 16384, 16383, 2])
    assert await ids(resource_id="orders/1", page_size=3, page=1) == (4, [40001, 16384, 16383])
    assert await ids(resource_id="orders/1", page_size=3, page=2) == (4, [2])
    assert await ids(resource_id="orders/1", page_size=2, page=3) == (4, [])
    assert await ids(resource_id="orders/1", actor="system") == (1, [16384])
    mine = await ids(resource_id="orders/1", actor=f"api_key:{org.key_id}")
    assert mine == (3, [40001, 16383, 2])
    since = (datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=16384)).isoformat()
    assert await ids(resource_id="orders/1", since=since) == (2, [40001, 16384])
    assert await ids(resource_id="orders/1", until=since) == (2, [16383, 2])
    assert await ids(resource_id="orders/2") == (4, [40000, 16385, 3, 1])
    assert await ids(resource_id="orders/3") == (0, [])
    other = await make_org(app, "Other")
    theirs = await client.get(LOG, headers=other.headers, params={"resource_id": "orders/1"})
    assert theirs.json()["total_count"] == 0


@pytest.mark.parametrize(
    "extra", [{}, {"actor": "system", "since": datetime(2026, 1, 1, tzinfo=UTC)}]
)
async def test_the_resource_filter_is_served_by_its_index(app, extra):
    """On both databases, with no statistics gathered, the resource filter's rows and count
    come from its index (SQLite would otherwise walk the key, or a range of ``at``)."""
    from callplane.audit_log.query import filtered
    from callplane.models.audit import RESOURCE_INDEX

    org = await make_org(app)
    await _events_across_runs(app, org)
    runtime = runtime_of(app)
    sqlite = BACKEND == "sqlite"
    query, order, _ = filtered(
        org.id,
        sqlite=sqlite,
        newest_seq=40001,
        actor=extra.get("actor"),
        action=None,
        resource_id="orders/1",
        since=extra.get("since"),
        until=None,
    )
    rows = query.order_by(*order).limit(50)
    count = sa.select(sa.func.count()).select_from(query.order_by(*order).subquery())
    async with runtime.db.session(write=False) as session:
        dialect = session.get_bind().dialect
        if not sqlite:  # a table this small would be read whole: which index, were one used?
            await session.execute(sa.text("SET LOCAL enable_seqscan = off"))
        for statement in (rows, count):
            sql = str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
            explain = "EXPLAIN QUERY PLAN " if sqlite else "EXPLAIN "
            plan = " ".join(str(row[-1]) for row in await session.execute(sa.text(explain + sql)))
            assert RESOURCE_INDEX in plan, plan
