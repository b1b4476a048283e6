"""Campaigns at scale, shown by plans rather than timings: choosing the due recipients is a
range of its index on both databases, and starting a campaign touches only its own row."""

from __future__ import annotations

import uuid

import httpx
from fastapi import FastAPI
from sqlalchemy import text

from callplane.engine.dialer import due_recipients
from callplane.models.base import utcnow
from tests.campaigns_support import add_csv, create_campaign, org_with_agent
from tests.factories import runtime_of
from tests.tenancy_check import checked


async def test_the_due_recipients_are_read_through_their_index(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    org = await org_with_agent(app)
    campaigns = [(await create_campaign(client, org, name=f"c{n}"))["id"] for n in range(2)]
    for cid in campaigns:
        rows = "".join(f"+1555{n:07d}\n" for n in range(3000))
        response = await add_csv(client, org, cid, "phone_number\n" + rows)
        assert response.json()["added"] == 3000, response.text
    runtime = runtime_of(app)
    statement = due_recipients(org.id, uuid.UUID(campaigns[0]), utcnow(), 55)
    with checked():
        async with runtime.db.session(write=True) as session:
            dialect = session.get_bind().dialect
            compiled = str(
                statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True})
            )
            if dialect.name == "postgresql":
                await session.execute(text("ANALYZE campaign_recipients"))
                plan = "\n".join((await session.scalars(text("EXPLAIN " + compiled))).all())
            else:
                await session.execute(text("ANALYZE"))
                rows = (await session.execute(text("EXPLAIN QUERY PLAN " + compiled))).all()
                plan = "\n".join(str(row[-1]) for row in rows)
    assert "ix_campaign_recipients_due" in plan, plan
    assert "Seq Scan" not in plan and "SCAN campaign_recipients" not in plan, plan
