"""Group commit (engine/batching.py): the moves of many calls share one transaction, and a batch
that fails is made again one move at a time, so one bad move fails alone."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterator

from callplane.engine.batching import GroupCommit
from callplane.engine.lifecycle import CANCELLED, CallRef, MoveRequest, apply_moves
from callplane.engine.runner import TaskRunner
from callplane.models.external_calls import Recording
from tests.conftest import client_for
from tests.engine_support import create_call, events_of
from tests.factories import make_org, runtime_of


@contextlib.contextmanager
def _warnings_of(name: str) -> Iterator[list[str]]:
    """The messages of the warnings a logger writes meanwhile (callplane's loggers do not
    propagate to pytest's capture)."""
    messages: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)


def _cancel(org_id: int, call_id: str, **extra: object) -> MoveRequest:
    return MoveRequest(
        CANCELLED, CallRef(org_id, uuid.UUID(call_id), ""), {}, {}, held=False, **extra
    )


async def test_a_bad_move_fails_alone_and_the_rest_of_its_batch_is_made(make_app):
    app = await make_app()
    org = await make_org(app)
    runner = TaskRunner(runtime_of(app))
    group = GroupCommit(lambda requests: runner.transact(apply_moves, requests))
    group.start()
    try:
        async with client_for(app) as client:
            good = [await create_call(client, org, "+14155550100") for _ in range(3)]
            bad = await create_call(client, org, "+14155550100")
            # A recording row missing its required columns: the batch's transaction fails.
            poison = _cancel(
                org.id, bad, rows=[(Recording, {"organization_id": org.id, "id": uuid.uuid4()})]
            )
            with _warnings_of("callplane.engine.batching") as warned:
                # Bounded: a regression here leaves moves waiting for ever, not failing.
                outcomes = await asyncio.wait_for(
                    asyncio.gather(
                        *(group.apply(_cancel(org.id, call_id)) for call_id in good[:2]),
                        group.apply(poison),
                        group.apply(_cancel(org.id, good[2])),
                        return_exceptions=True,
                    ),
                    30,
                )
            statuses = {
                call_id: (await client.get(f"/v1/calls/{call_id}", headers=org.headers)).json()[
                    "call"
                ]["status"]
                for call_id in [*good, bad]
            }
            bad_events = await events_of(client, org, bad)
    finally:
        await group.stop()

    assert warned == ["a batch of moves failed; making them one by one"]  # one batch, failed
    assert isinstance(outcomes[2], Exception)
    assert all(not isinstance(o, BaseException) and o is not None for o in outcomes[:2])
    assert not isinstance(outcomes[3], BaseException) and outcomes[3] is not None
    assert statuses == {**dict.fromkeys(good, "cancelled"), bad: "enqueued"}
    assert [e["type"] for e in bad_events if e["type"] == "call.cancelled"] == []


async def test_two_moves_of_one_call_in_a_batch_count_only_the_one_that_was_made(make_app):
    # A worker's own move and the lease reaper's can meet in one group commit. The reaper's
    # (its lease not expired) is not made: it must neither be reported nor get an event, and
    # the move that was made keeps its own event number.
    app = await make_app()
    org = await make_org(app)
    runner = TaskRunner(runtime_of(app))
    async with client_for(app) as client:
        call_id = await create_call(client, org, "+14155550100")
        made, reaped = await runner.transact(
            apply_moves, [_cancel(org.id, call_id), _cancel(org.id, call_id, lease_expired=True)]
        )
        events = await events_of(client, org, call_id)

    assert made is not None and reaped is None
    assert [(e["type"], e["sequence"]) for e in events] == [("call.cancelled", 1)]
