"""The tenancy check itself (tests/tenancy_check.py): it catches a missing organization filter
on any table that has ``organization_id``, and accepts the helper's statements."""

from __future__ import annotations

import uuid

from sqlalchemy import Column, Integer, MetaData, Table, func, select, update
from sqlalchemy.orm import aliased

from callplane.kit.tenancy import (
    across_organizations,
    delete_owned,
    owned_by,
    same_organization,
    select_owned,
    update_owned,
)
from callplane.models.call_tags import CallTag
from callplane.models.calls import Call, CallTagLink
from tests.tenancy_check import check_statement

# A table no model knows, as another part of the code (or a custom-data table) would add.
_new = Table("brand_new", MetaData(), Column("organization_id", Integer), Column("id", Integer))


def test_unfiltered_statements_are_caught() -> None:
    assert check_statement(select(Call)) == ["calls"]
    assert check_statement(select(Call.id).where(Call.id == uuid.uuid4())) == ["calls"]
    assert check_statement(update(Call).values(status="failed")) == ["calls"]
    assert check_statement(select(_new.c.id)) == ["brand_new"]
    # A filter inside an OR does not restrict the rows.
    assert check_statement(select(Call).where(owned_by(Call, 1) | (Call.status == "x"))) == [
        "calls"
    ]
    # A joined table tied to nothing filtered.
    joined = select_owned(CallTagLink, 1).join(CallTag, CallTag.id == CallTagLink.tag_uuid)
    assert check_statement(joined) == ["call_tags"]
    # A subquery is checked on its own.
    inner = select(Call.id).scalar_subquery()
    assert check_statement(select_owned(CallTag, 1).where(CallTag.id == inner)) == ["calls"]
    assert check_statement(select(func.count()).select_from(select(Call).subquery())) == ["calls"]


def test_the_helpers_statements_pass() -> None:
    assert check_statement(select_owned(Call, 1)) == []
    assert check_statement(select_owned(Call, 7, Call.id).where(Call.status == "x")) == []
    assert check_statement(update_owned(Call, 1).values(status="failed")) == []
    assert check_statement(delete_owned(_new, 3)) == []
    link = same_organization(CallTag, CallTagLink) & (CallTag.id == CallTagLink.tag_uuid)
    assert check_statement(select_owned(CallTagLink, 1).join(CallTag, link)) == []
    other = aliased(Call)
    tied = select_owned(Call, 1).join(other, same_organization(other, Call))
    assert check_statement(tied) == []
    counted = select(func.count()).select_from(select_owned(Call, 1).subquery())
    assert check_statement(counted) == []


def test_the_documented_escape_is_allowed() -> None:
    claim = across_organizations(
        select(Call.id).limit(1), "a worker claims any organization's call"
    )
    assert check_statement(claim) == []
