"""The history database's first schema: applications, allocations, queue usage, events and
configuration changes (core.history.tables).

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "applications",
        sa.Column("rm_id", sa.Text(), primary_key=True),
        sa.Column("partition", sa.Text(), primary_key=True),
        sa.Column("app_id", sa.Text(), primary_key=True),
        sa.Column("queue", sa.Text(), nullable=False),
        sa.Column("user", sa.Text(), nullable=False),
        sa.Column("groups", sa.JSON, nullable=False),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("submitted", sa.Float, nullable=False),
        sa.Column("accepted", sa.Float),
        sa.Column("running", sa.Float),
        sa.Column("finished", sa.Float),
        sa.Column("reason", sa.Text()),
    )
    op.create_index("applications_by_submitted", "applications", ["submitted"])
    op.create_index("applications_by_queue", "applications", ["partition", "queue"])
    op.create_index("applications_by_user", "applications", ["user"])
    op.create_table(
        "allocations",
        sa.Column("rm_id", sa.Text(), primary_key=True),
        sa.Column("partition", sa.Text(), primary_key=True),
        sa.Column("app_id", sa.Text(), primary_key=True),
        sa.Column("allocation_key", sa.Text(), primary_key=True),
        sa.Column("started", sa.Float, primary_key=True),
        sa.Column("queue", sa.Text(), nullable=False),
        sa.Column("user", sa.Text(), nullable=False),
        sa.Column("node", sa.Text(), nullable=False),
        sa.Column("instance_type", sa.Text(), nullable=False),
        sa.Column("resources", sa.JSON, nullable=False),
        sa.Column("ended", sa.Float),
        sa.Column("termination", sa.String(64)),
    )
    op.create_index(
        "allocations_open", "allocations", ["rm_id", "partition", "app_id", "allocation_key"], unique=True,
        sqlite_where=sa.text("ended IS NULL"), postgresql_where=sa.text("ended IS NULL"),
    )  # fmt: skip
    op.create_index("allocations_by_started", "allocations", ["started"])
    op.create_table(
        "queue_usage",
        sa.Column("rm_id", sa.Text(), primary_key=True),
        sa.Column("partition", sa.Text(), primary_key=True),
        sa.Column("queue", sa.Text(), primary_key=True),
        sa.Column("at", sa.Float, primary_key=True),
        sa.Column("allocated", sa.JSON, nullable=False),
        sa.Column("pending", sa.JSON, nullable=False),
    )
    op.create_index("queue_usage_by_at", "queue_usage", ["at"])
    op.create_table(
        "events",
        sa.Column("digest", sa.String(40), primary_key=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("rm_id", sa.Text(), nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("object_id", sa.Text(), nullable=False),
        sa.Column("change_type", sa.String(16), nullable=False),
        sa.Column("change_detail", sa.String(32), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("reference_id", sa.Text(), nullable=False),
        sa.Column("resource", sa.JSON, nullable=False),
    )
    op.create_index("events_by_object", "events", ["object_id", "at"])
    op.create_index("events_by_at", "events", ["at"])
    op.create_table(
        "config_changes",
        sa.Column("rm_id", sa.Text(), primary_key=True),
        sa.Column("at", sa.Float, primary_key=True),
        sa.Column("who", sa.Text(), nullable=False),
        sa.Column("diff", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    for table in ("config_changes", "events", "queue_usage", "allocations", "applications"):
        op.drop_table(table)
