"""What tools write on the call while it runs: the ``cart`` a function tool returned, and a
transfer's record (docs/tools.md#transfers: ``transferred``, ``screen_pop_token``,
``handoff_metadata[provider]``, event and webhook ``call.transferred``). Each is one UPDATE of
the call, in its own organization, and the transfer takes the call's next event number as every
move does (``calls.events``)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select

from callplane.calls.events import record_call_event
from callplane.kit.tenancy import update_owned
from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.models.orgs import Organization
from callplane.runtime import Runtime
from callplane.tools import Transfer


async def set_cart(
    runtime: Runtime, organization_id: int, call_id: uuid.UUID, cart: dict[str, Any]
) -> None:
    async with runtime.db.session(write=True) as session:
        await session.execute(
            update_owned(Call, organization_id)
            .where(Call.id == call_id)
            .values(cart=cart, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        await session.commit()


async def record_transfer(
    runtime: Runtime,
    organization_id: int,
    call_id: uuid.UUID,
    transfer: Transfer,
    agent_name: str | None,
) -> None:
    now = utcnow()
    provider = transfer.destination.get("handoff_provider")
    async with runtime.db.session(write=True) as session:
        values: dict[str, Any] = {
            "transferred": True,
            "screen_pop_token": transfer.screen_pop_token,
            "updated_at": now,
            "event_sequence": Call.event_sequence + 1,
        }
        if provider:
            tenant_name = await session.scalar(
                select(Organization.name).where(Organization.id == organization_id)
            )
            existing = await session.scalar(
                select(Call.handoff_metadata).where(
                    Call.organization_id == organization_id, Call.id == call_id
                )
            )
            values["handoff_metadata"] = {
                **(existing or {}),
                str(provider): {
                    "conversation_id": transfer.leg_call_id,
                    "tenant_name": tenant_name,
                    "campaign_name": agent_name,
                    "transferred_at": now.isoformat().replace("+00:00", "Z"),
                },
            }
        call = await session.scalar(
            update_owned(Call, organization_id)
            .where(Call.id == call_id)
            .values(**values)
            .returning(Call)
            .execution_options(synchronize_session=False)
        )
        if call is None:
            return
        data = {
            "destination": transfer.destination.get("name"),
            "mode": transfer.destination.get("mode") or "cold",
            "screen_pop_token": transfer.screen_pop_token,
        }
        await record_call_event(session, runtime, call, "call.transferred", data)
        await session.commit()
