"""webhook endpoint secrets encrypted at rest with the deployment's key

The secrets stored in plain so far are sealed (``callplane.webhooks.secrets``) under the key
``serve`` uses: CALLPLANE_SIGNING_KEY when set, else the key stored in ``app_settings`` (made
here when the database has none yet). The column keeps its type: a sealed secret fits in it.
Downgrading opens them again.

Revision ID: 0010
Revises: 0009
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from callplane.deployment import create_signing_key, stored_key
from callplane.settings import Settings
from callplane.webhooks.secrets import PREFIX, SecretBox

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_endpoints = sa.table(
    "webhook_endpoints",
    sa.column("organization_id", sa.Integer),
    sa.column("id", sa.Uuid),
    sa.column("secret", sa.String),
)


def _box() -> SecretBox:
    bind = op.get_bind()
    settings = Settings()
    if settings.signing_key:
        return SecretBox(settings.signing_key.encode())
    create_signing_key(bind)
    return SecretBox(stored_key(bind))


def _rewrite(change: str) -> None:
    bind = op.get_bind()
    rows = bind.execute(sa.select(_endpoints)).all()
    if not rows:
        return
    box = _box()
    for row in rows:
        sealed = row.secret.startswith(PREFIX)
        if change == "seal" and not sealed:
            value = box.seal(row.secret, row.id)
        elif change == "open" and sealed:
            value = box.open(row.secret, row.id)
        else:
            continue
        bind.execute(
            _endpoints.update()
            .where(_endpoints.c.organization_id == row.organization_id, _endpoints.c.id == row.id)
            .values(secret=value)
        )


def upgrade() -> None:
    _rewrite("seal")


def downgrade() -> None:
    _rewrite("open")
