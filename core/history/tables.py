"""The history database's tables (SQLAlchemy Core). Every record has a key that a core restart, a
re-registering RM or a replayed write maps onto the same row, so writing it again changes nothing:

- applications: one row per (rmID, partition, application); an ID used again after its application
  finished starts the row over (a new run);
- allocations: one row per (rmID, partition, application, allocation key, start); while an allocation
  runs (no end yet) at most one row per key may be open, so the same running allocation sent again
  after a restart is not a second one;
- queue_usage: one sample per (rmID, partition, queue, time);
- events: the core's event records, keyed by a digest of their fields;
- config_changes: one row per (rmID, time) a configuration was put in force and differed from the one
  before (the last one recorded, when the core restarted in between): who sent it, the diff, and the
  text.

Times are Unix seconds (floats); resources are JSON objects of name to quantity. Migrations live in
core/history/migrations (alembic); `tests/unit/test_history_schema.py` holds them equal to this.
"""

from __future__ import annotations

from sqlalchemy import JSON, Column, Float, Index, MetaData, String, Table, Text, text

metadata = MetaData()

# Names and IDs are Text: as long as the core lets them be (its limits and a node's attributes), so a
# long one is never a write the database refuses.

applications = Table(
    "applications",
    metadata,
    Column("rm_id", Text, primary_key=True),
    Column("partition", Text, primary_key=True),
    Column("app_id", Text, primary_key=True),
    Column("queue", Text, nullable=False, default=""),
    Column("user", Text, nullable=False, default=""),
    Column("groups", JSON, nullable=False, default=list),
    Column("tags", JSON, nullable=False, default=dict),
    Column("state", String(32), nullable=False),
    Column("submitted", Float, nullable=False),
    Column("accepted", Float),
    Column("running", Float),
    Column("finished", Float),
    Column("reason", Text),
)
Index("applications_by_submitted", applications.c.submitted)
Index("applications_by_queue", applications.c.partition, applications.c.queue)
Index("applications_by_user", applications.c.user)

allocations = Table(
    "allocations",
    metadata,
    Column("rm_id", Text, primary_key=True),
    Column("partition", Text, primary_key=True),
    Column("app_id", Text, primary_key=True),
    Column("allocation_key", Text, primary_key=True),
    Column("started", Float, primary_key=True),
    Column("queue", Text, nullable=False, default=""),
    Column("user", Text, nullable=False, default=""),
    Column("node", Text, nullable=False, default=""),
    Column("instance_type", Text, nullable=False, default=""),
    Column("resources", JSON, nullable=False),
    Column("ended", Float),
    Column("termination", String(64)),
)
# At most one open (running) row per allocation key: the same allocation sent again (a restart) is not
# a second one. A partial unique index, which SQLite and PostgreSQL both have.
Index(
    "allocations_open",
    allocations.c.rm_id, allocations.c.partition, allocations.c.app_id, allocations.c.allocation_key,
    unique=True,
    sqlite_where=text("ended IS NULL"),
    postgresql_where=text("ended IS NULL"),
)  # fmt: skip
Index("allocations_by_started", allocations.c.started)

queue_usage = Table(
    "queue_usage",
    metadata,
    Column("rm_id", Text, primary_key=True),
    Column("partition", Text, primary_key=True),
    Column("queue", Text, primary_key=True),
    Column("at", Float, primary_key=True),
    Column("allocated", JSON, nullable=False),
    Column("pending", JSON, nullable=False),
)
Index("queue_usage_by_at", queue_usage.c.at)

events = Table(
    "events",
    metadata,
    Column("digest", String(40), primary_key=True),  # sha1 of the fields: a replayed record is the same
    Column("at", Float, nullable=False),
    Column("rm_id", Text, nullable=False),
    Column("type", String(16), nullable=False),
    Column("object_id", Text, nullable=False),
    Column("change_type", String(16), nullable=False),
    Column("change_detail", String(32), nullable=False),
    Column("message", Text, nullable=False),
    Column("reference_id", Text, nullable=False),
    Column("resource", JSON, nullable=False),
)
Index("events_by_object", events.c.object_id, events.c.at)
Index("events_by_at", events.c.at)

config_changes = Table(
    "config_changes",
    metadata,
    Column("rm_id", Text, primary_key=True),
    Column("at", Float, primary_key=True),
    Column("who", Text, nullable=False),
    Column("diff", Text, nullable=False),
    Column("change", String(16)),  # registered or updated (schema 2; NULL in rows written before)
    Column("config", Text),  # the text in force after (schema 2; NULL in rows written before)
)
Index("config_changes_by_at", config_changes.c.at)
