"""The fixture document (docs/api-contract.md#the-fixture-document): one transaction, ids kept or
generated, document order."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from callplane.loader import LoadError
from callplane.models.voices import Voice
from tests.factories import load, make_org, runtime_of

VOICE = "0b7d6f3a-2c1e-4f5a-9b8c-7d6e5f4a3b01"


async def _count(app, model) -> int:
    async with runtime_of(app).db.session(write=False) as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


async def test_ids_are_kept_or_generated_in_document_order(app):
    org = await make_org(app)
    created = await load(
        app,
        org,
        {
            "agents": [{"id": 40, "name": "a"}, {"name": "b"}],
            "voices": [{"id": VOICE, "name": "z"}, {"name": "a"}],
        },
    )
    assert created["agents"][0] == 40
    assert created["agents"][1] > 40  # the id sequence moved past the explicit id
    assert created["voices"][0] == VOICE and len(created["voices"]) == 2


@pytest.mark.parametrize(
    "document, message",
    [
        (
            {"voices": [{"name": "ok"}], "phone_numbers": [{"number": "+1", "agent_id": 999}]},
            "agent_id",
        ),
        ({"voices": [{"name": "ok"}, {"name": ""}]}, "voices[1]"),
        ({"voices": [{"name": "ok"}], "bogus": []}, "unknown sections"),
        ({"voices": {"name": "ok"}}, "must be a list"),
        (
            {"voices": [{"name": "ok"}, {"id": VOICE, "name": "dup"}, {"id": VOICE, "name": "d"}]},
            "voices",
        ),
    ],
    ids=["bad-reference", "invalid-item", "unknown-section", "not-a-list", "duplicate-id"],
)
async def test_an_invalid_document_changes_nothing(app, document, message):
    org = await make_org(app)
    with pytest.raises(LoadError) as error:
        await load(app, org, document)
    assert message in error.value.message
    assert await _count(app, Voice) == 0


async def test_a_document_cannot_reference_another_organizations_agent(app):
    mine = await make_org(app, "mine")
    theirs = await make_org(app, "theirs")
    [agent_id] = (await load(app, theirs, {"agents": [{"name": "theirs"}]}))["agents"]
    with pytest.raises(LoadError):
        await load(app, mine, {"phone_numbers": [{"number": "+1415", "agent_id": agent_id}]})
