"""History schema 2: a configuration change keeps what kind it was and the text it put in force (so a
core that restarts compares an RM's registration with the last one recorded), indexed by time for
the retention's pruning.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Batch mode: SQLite alters a table by copying it; PostgreSQL alters in place.
    with op.batch_alter_table("config_changes") as table:
        table.add_column(sa.Column("change", sa.String(16)))  # registered or updated; NULL before 0002
        table.add_column(sa.Column("config", sa.Text()))  # the text in force after; NULL before 0002
    op.create_index("config_changes_by_at", "config_changes", ["at"])


def downgrade() -> None:
    op.drop_index("config_changes_by_at", "config_changes")
    with op.batch_alter_table("config_changes") as table:
        table.drop_column("config")
        table.drop_column("change")
