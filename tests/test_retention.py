"""Retention (CALLPLANE_RETENTION_DAYS): call events and webhook deliveries older than the
cutoff are purged in small batches, across organizations; newer rows stay."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import update

from callplane.engine import retention
from callplane.engine.runner import TaskRunner
from callplane.models.base import utcnow
from callplane.models.calls import CallEvent
from callplane.models.webhooks import WebhookDelivery
from tests.conftest import client_for
from tests.engine_support import create_call, events_of
from tests.factories import make_org, runtime_of


async def test_old_events_and_deliveries_are_purged_in_batches_and_new_ones_stay(
    make_app, monkeypatch
):
    app = await make_app(worker="off", webhook_allow_private_networks=True, retention_days=30)
    runtime = runtime_of(app)
    orgs = [await make_org(app, "Acme"), await make_org(app, "Globex")]
    now = utcnow()
    async with client_for(app) as client:
        owners = orgs * 2
        old_calls = [await create_call(client, org, "+14155550100") for org in owners]
        new_call = await create_call(client, orgs[0], "+14155550100")
        for org, call_id in [*zip(owners, old_calls, strict=True), (orgs[0], new_call)]:
            cancel = await client.post(f"/v1/calls/{call_id}/cancel", headers=org.headers)
            assert cancel.status_code == 200, cancel.text  # an event: call.cancelled
        hook = (
            await client.post(
                "/v1/webhooks", json={"url": "http://127.0.0.1:9/hook"}, headers=orgs[0].headers
            )
        ).json()["webhook"]
        test = await client.post(f"/v1/webhooks/{hook['id']}/test", headers=orgs[0].headers)
        event_id = uuid.UUID(test.json()["event_id"])
        async with runtime.db.session(write=True) as session:
            await session.execute(
                update(CallEvent)
                .where(CallEvent.call_uuid.in_([uuid.UUID(c) for c in old_calls]))
                .values(at=now - timedelta(days=31))
            )
            for days in (31, 32, 29):
                session.add(
                    WebhookDelivery(
                        organization_id=orgs[0].id,
                        id=uuid.uuid4(),
                        endpoint_id=uuid.UUID(hook["id"]),
                        event_id=event_id,
                        event_type="webhook.test",
                        attempt=1,
                        status_code=500,
                        created_at=now - timedelta(days=days),
                    )
                )
            await session.commit()
        assert all(
            [await events_of(client, org, c) for org, c in zip(owners, old_calls, strict=True)]
        )

        monkeypatch.setattr(retention, "BATCH", 1)
        runner = TaskRunner(runtime)
        steps = 1
        while await retention.purge_step(runner, now):
            steps += 1

        left = [await events_of(client, org, c) for org, c in zip(owners, old_calls, strict=True)]
        kept = await events_of(client, orgs[0], new_call)
        deliveries = (
            await client.get(f"/v1/webhooks/{hook['id']}/deliveries", headers=orgs[0].headers)
        ).json()["deliveries"]
    assert left == [[], [], [], []]
    assert kept  # the new call's events are younger than the cutoff
    assert len(deliveries) == 1  # the one of 29 days
    assert steps >= 4  # one row at a time: a batch per old call
