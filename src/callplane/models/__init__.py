"""Every ORM model, imported here so ``Base.metadata`` is complete for Alembic and the drift check.

Tenant tables carry ``organization_id`` as their first column and the first column of every
index; tables keyed by uuid use ``(organization_id, id)`` as primary key, which is also the
shape a distributed PostgreSQL (Citus, distributed by organization_id) needs.
"""

from callplane.models import (  # noqa: F401
    agent_tests,
    agents,
    audit,
    call_tags,
    calls,
    campaigns,
    contacts,
    custom_data,
    external_calls,
    knowledge,
    orgs,
    phone_numbers,
    users,
    voices,
    web_calls,
    webhooks,
)
from callplane.models.base import USER_TABLE_PREFIX, Base

metadata = Base.metadata


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Whether migrations and the drift check manage this name: not custom data tables (created
    at run time), nor the full-text index of knowledge chunks, which exists on one backend only
    (``models/knowledge.py``)."""
    if name is None:
        return True
    if type_ == "table":
        return not name.startswith((USER_TABLE_PREFIX, knowledge.FTS_TABLE_PREFIX))
    if type_ == "column":
        table = parent_names.get("table_name") if isinstance(parent_names, dict) else None
        return not (table == "knowledge_chunks" and name == knowledge.SEARCH_VECTOR)
    if type_ == "index":
        return name != knowledge.SEARCH_INDEX
    return True


__all__ = ["Base", "include_name", "metadata"]
