"""Every ORM model, imported here so ``Base.metadata`` is complete for Alembic and the drift check.

Tenant tables carry ``organization_id`` as their first column and the first column of every
index; tables keyed by uuid use ``(organization_id, id)`` as primary key, which is also the
shape a distributed PostgreSQL (Citus, distributed by organization_id) needs.
"""

from callplane.models import (  # noqa: F401
    agent_tests,
    agents,
    call_tags,
    calls,
    contacts,
    custom_data,
    external_calls,
    orgs,
    phone_numbers,
    users,
    voices,
    web_calls,
    webhooks,
)
from callplane.models.base import Base

metadata = Base.metadata

__all__ = ["Base", "metadata"]
