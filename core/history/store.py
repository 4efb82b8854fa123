"""The history database: opened and migrated at start, written in batches by the recorder's thread,
read by the REST API and `pykorn history`. Blocking (SQLAlchemy's engine): callers on the event loop
go through a thread.

A write is a list of `Op`s, each a statement's kind and its parameters; a batch runs in one
transaction, each kind as one executemany. Every statement is idempotent (core.history.tables): a
batch written twice, or the same facts sent again after a restart, leave the same rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

import orjson
from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, and_, create_engine, delete, event, func, select

from core.history.reconcile import close_lost
from core.history.tables import allocations, applications, config_changes, events, queue_usage

MIGRATIONS = Path(__file__).parent / "migrations"
TERMINAL = ("Completed", "Failed", "Rejected", "Expired")


Record = tuple[str, Any]  # (kind, params): an Op, or the plain tuple the recorder makes on its hot path


class Op(NamedTuple):
    kind: str  # one of FIELDS' keys
    params: Any  # a tuple in FIELDS[kind]'s order, JSON fields encoded; or a dict by those names


class HistoryStore:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: Engine = create_engine(url, pool_pre_ping=True, **_engine_options(url))
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._statements = _statements(self.engine.dialect.name)

    @property
    def described(self) -> str:
        """The URL without its password, for logs and the demo's summary."""
        return self.engine.url.render_as_string(hide_password=True)

    def migrate(self) -> None:
        """The schema brought to this pykorn's (alembic upgrade head)."""
        with self.engine.begin() as connection:
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS))
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def close(self) -> None:
        self.engine.dispose()

    # Writing ----------------------------------------------------------------------------------
    def write(self, ops: Sequence[Record]) -> None:
        """One transaction, in the ops' order: each run of ops of one kind as one executemany (an
        allocation's end must come after its start, a state after the one before it)."""
        with self.engine.begin() as connection:
            for kind, run in groupby(ops, key=itemgetter(0)):
                if kind == "reconcile":  # reads what is open; in its place in the order
                    for _, params in run:
                        close_lost(connection, params)
                    continue
                # A tuple is a row already (core.history.rows made it, JSON as text); a dict is made one.
                rows = [params if type(params) is tuple else row_of(kind, params) for _, params in run]
                for statement in self._statements[kind]:
                    picked = (
                        rows if statement.identity else [tuple(r[i] for i in statement.picks) for r in rows]
                    )
                    connection.exec_driver_sql(statement.sql, picked)

    def prune(self, before: float) -> int:
        """Records older than `before` gone: finished applications, ended allocations, samples, events
        and configuration changes; how many rows went."""
        gone = 0
        # A transaction each, each narrowed by an indexed time (what ended before `before` began before
        # it): no long lock over every table, and no index on the end times, which every end would
        # have to update.
        apps, allocs = applications.c, allocations.c
        for statement in (
            delete(applications).where(apps.submitted < before, apps.finished < before),
            delete(allocations).where(allocs.started < before, allocs.ended < before),
            delete(queue_usage).where(queue_usage.c.at < before),
            delete(events).where(events.c.at < before),
            delete(config_changes).where(
                config_changes.c.at < before, config_changes.c.at < _newest_of_its_rm()
            ),
        ):
            with self.engine.begin() as connection:
                gone += connection.execute(statement).rowcount or 0
        return gone

    # Reading ----------------------------------------------------------------------------------
    def applications(
        self,
        partition: str = "",
        queue: str = "",
        user: str = "",
        state: str = "",
        since: float | None = None,
        until: float | None = None,
        limit: int = 100,
        offset: int = 0,
        rm_id: str = "",
    ) -> tuple[int, list[dict[str, Any]]]:
        """(how many match, the page): applications submitted in [since, until), newest first; of one
        RM when `rm_id` is given."""
        c = applications.c
        where = []
        given = (
            (c.rm_id, rm_id),
            (c.partition, partition),
            (c.queue, queue),
            (c.user, user),
            (c.state, state),
        )
        for column, value in given:
            if value:
                where.append(column == value)
        if since is not None:
            where.append(c.submitted >= since)
        if until is not None:
            where.append(c.submitted < until)
        condition = and_(*where) if where else None
        with self.engine.connect() as connection:
            count = select(func.count()).select_from(applications)
            total = connection.execute(
                count.where(condition) if condition is not None else count
            ).scalar_one()
            page = select(applications).order_by(c.submitted.desc(), c.app_id).limit(limit).offset(offset)
            rows = connection.execute(page.where(condition) if condition is not None else page)
            return int(total), [dict(row._mapping) for row in rows]

    def application(self, partition: str, app_id: str, rm_id: str = "") -> dict[str, Any] | None:
        """One application (of `rm_id`, or of any RM) with its allocations and its events, oldest
        first."""
        c = applications.c
        query = select(applications).where(c.partition == partition, c.app_id == app_id)
        if rm_id:
            query = query.where(c.rm_id == rm_id)
        with self.engine.connect() as connection:
            row = connection.execute(query.order_by(c.submitted.desc()).limit(1)).first()
            if row is None:
                return None
            app = dict(row._mapping)
            a = allocations.c
            app["allocations"] = [
                dict(r._mapping)
                for r in connection.execute(
                    select(allocations)
                    .where(a.rm_id == app["rm_id"], a.partition == partition, a.app_id == app_id)
                    .order_by(a.started, a.allocation_key)
                )
            ]
            e = events.c
            app["events"] = [
                dict(r._mapping)
                for r in connection.execute(
                    select(events).where(e.rm_id == app["rm_id"], e.object_id == app_id).order_by(e.at)
                )
            ]
            return app

    def queue_usage(
        self, partition: str, queue: str, since: float, until: float, rm_id: str = ""
    ) -> list[dict[str, Any]]:
        q = queue_usage.c
        query = select(q.at, q.allocated, q.pending).where(
            q.partition == partition, q.queue == queue, q.at >= since, q.at < until
        )
        if rm_id:
            query = query.where(q.rm_id == rm_id)
        with self.engine.connect() as connection:
            rows = connection.execute(query.order_by(q.at))
            return [dict(r._mapping) for r in rows]

    def usage(self, by: str, since: float, until: float, now: float) -> list[dict[str, Any]]:
        """Resource-seconds of allocations in [since, until) by user or queue (`by`) and instance type;
        a running allocation counts up to `now`."""
        a = allocations.c
        key = a.user if by == "user" else a.queue
        totals: dict[tuple[str, str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(a.partition, key, a.instance_type, a.resources, a.started, a.ended).where(
                    a.started < until, (a.ended.is_(None)) | (a.ended > since)
                )
            )
            for partition, name, instance_type, resources, started, ended in rows:
                seconds = max(0.0, min(ended if ended is not None else now, until) - max(started, since))
                bucket = totals[partition, name, instance_type or "UNKNOWN"]
                for resource, quantity in (resources or {}).items():
                    bucket[resource] += quantity * seconds
        return [
            {"partition": p, by: name, "instanceType": kind, "resourceSeconds": dict(used)}
            for (p, name, kind), used in sorted(totals.items())
        ]

    def last_config(self, rm_id: str) -> str | None:
        """The configuration text last recorded for an RM (None: none, or only before schema 2)."""
        c = config_changes.c
        with self.engine.connect() as connection:
            return connection.execute(
                select(c.config).where(c.rm_id == rm_id, c.config.is_not(None)).order_by(c.at.desc()).limit(1)
            ).scalar()

    def config_changes(
        self, rm_id: str = "", since: float | None = None, until: float | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Configuration changes in [since, until), newest first (without the texts: their diffs)."""
        c = config_changes.c
        query = select(c.rm_id, c.at, c.who, c.change, c.diff).order_by(c.at.desc(), c.rm_id).limit(limit)
        if rm_id:
            query = query.where(c.rm_id == rm_id)
        if since is not None:
            query = query.where(c.at >= since)
        if until is not None:
            query = query.where(c.at < until)
        with self.engine.connect() as connection:
            return [dict(r._mapping) for r in connection.execute(query)]

    def counts(self) -> dict[str, int]:
        """Rows per table (the benchmarks and the demo's summary)."""
        with self.engine.connect() as connection:
            return {
                table.name: int(connection.execute(select(func.count()).select_from(table)).scalar_one())
                for table in (applications, allocations, queue_usage, events, config_changes)
            }


def _newest_of_its_rm() -> Any:
    """The time of the newest configuration change of the row's RM: kept whatever its age, so a core
    that restarts compares a registration with it."""
    newest = config_changes.alias("newest")
    return select(func.max(newest.c.at)).where(newest.c.rm_id == config_changes.c.rm_id).scalar_subquery()


def _engine_options(url: str) -> dict[str, Any]:
    if url.startswith("sqlite"):
        return {"connect_args": {"check_same_thread": False, "timeout": 30}}
    return {"pool_size": 4, "max_overflow": 4, "connect_args": {"connect_timeout": 5}}


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    """WAL: the REST API reads while the recorder writes; NORMAL: durable at each checkpoint, as
    WAL's recommended setting (a crash of the machine may lose the last batches, not corrupt)."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


# What each write kind's parameters are, in order: an Op's params are a tuple in this order (the
# recorder's, JSON fields already encoded) or a dict of these names (encoded here).
FIELDS: Mapping[str, tuple[str, ...]] = {
    "app_new": ("rm_id", "partition", "app_id", "queue", "user", "groups", "tags", "at"),
    "app_accepted": ("rm_id", "partition", "app_id", "at"),
    "app_running": ("rm_id", "partition", "app_id", "at"),
    "app_state": ("rm_id", "partition", "app_id", "state"),
    "app_finished": ("rm_id", "partition", "app_id", "state", "at", "reason"),
    "app_rejected": ("rm_id", "partition", "app_id", "queue", "user", "groups", "tags", "at", "reason"),
    "alloc_start": (
        "rm_id", "partition", "app_id", "allocation_key", "at", "queue", "user", "node", "instance_type",
        "resources",
    ),
    "alloc_end": ("rm_id", "partition", "app_id", "allocation_key", "at", "termination"),
    "alloc_resized": (
        "rm_id", "partition", "app_id", "allocation_key", "at", "queue", "user", "node", "instance_type",
        "resources",
    ),
    "app_removed": ("rm_id", "partition", "app_id", "at"),
    "event": (
        "digest", "at", "rm_id", "type", "object_id", "change_type", "change_detail", "message",
        "reference_id", "resource",
    ),
    "queue_sample": ("rm_id", "partition", "queue", "at", "allocated", "pending"),
    "config_change": ("rm_id", "at", "who", "diff", "change", "config"),
}  # fmt: skip
JSON_FIELDS = frozenset({"groups", "tags", "resources", "resource", "allocated", "pending"})
# Where each kind's JSON fields are in its tuple: a record may hold a mapping there, encoded by row_of
# in the writer thread (core.history.rows), off the scheduler's loop.
_JSON_AT = {
    kind: tuple(i for i, f in enumerate(fields) if f in JSON_FIELDS) for kind, fields in FIELDS.items()
}
_KEY = '"rm_id" = {p} AND "partition" = {p} AND "app_id" = {p}'

# Each kind's statements: (SQL with {p} for a parameter and {j} for a JSON one, the kind's fields each
# parameter takes, in order). Written for SQLite and PostgreSQL alike; run through the driver itself
# (executemany of tuples): the rows are many and small, and SQLAlchemy's per-row processing would cost
# the scheduler's loop more than the database does.
_SQL: Mapping[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "app_new": (
        ('UPDATE applications SET "queue" = {p}, "user" = {p}, "groups" = {j}, "tags" = {j}, '
         '"state" = \'New\', "submitted" = {p}, "accepted" = NULL, "running" = NULL, "finished" = NULL, '
         '"reason" = NULL WHERE ' + _KEY + ' AND "finished" IS NOT NULL',
         ("queue", "user", "groups", "tags", "at", "rm_id", "partition", "app_id")),
        ('INSERT INTO applications ("rm_id", "partition", "app_id", "queue", "user", "groups", "tags", '
         '"state", "submitted") VALUES ({p}, {p}, {p}, {p}, {p}, {j}, {j}, \'New\', {p}) '
         "ON CONFLICT DO NOTHING",
         ("rm_id", "partition", "app_id", "queue", "user", "groups", "tags", "at")),
    ),
    "app_accepted": (
        ('UPDATE applications SET "state" = \'Accepted\', "accepted" = COALESCE("accepted", {p}) '
         "WHERE " + _KEY,
         ("at", "rm_id", "partition", "app_id")),
    ),
    "app_running": (
        ('UPDATE applications SET "state" = \'Running\', "running" = COALESCE("running", {p}) WHERE ' + _KEY,
         ("at", "rm_id", "partition", "app_id")),
    ),
    "app_state": (
        ('UPDATE applications SET "state" = {p} WHERE ' + _KEY, ("state", "rm_id", "partition", "app_id")),
    ),
    "app_finished": (
        ('UPDATE applications SET "state" = {p}, "finished" = COALESCE("finished", {p}), "reason" = {p} '
         "WHERE " + _KEY, ("state", "at", "reason", "rm_id", "partition", "app_id")),
        ('UPDATE allocations SET "ended" = {p}, "termination" = \'APPLICATION_ENDED\' WHERE ' + _KEY
         + ' AND "ended" IS NULL', ("at", "rm_id", "partition", "app_id")),
    ),
    # Its RM removed it (or it left its queue): finished now unless it was already, its allocations too.
    "app_removed": (
        ('UPDATE applications SET "finished" = COALESCE("finished", {p}) WHERE ' + _KEY,
         ("at", "rm_id", "partition", "app_id")),
        ('UPDATE allocations SET "ended" = {p}, "termination" = \'APPLICATION_ENDED\' WHERE ' + _KEY
         + ' AND "ended" IS NULL', ("at", "rm_id", "partition", "app_id")),
    ),
    # Resized in place: the row so far ends, a row at the new size starts.
    "alloc_resized": (
        ('UPDATE allocations SET "ended" = {p}, "termination" = \'RESIZED\' WHERE ' + _KEY
         + ' AND "allocation_key" = {p} AND "ended" IS NULL',
         ("at", "rm_id", "partition", "app_id", "allocation_key")),
        ('INSERT INTO allocations ("rm_id", "partition", "app_id", "allocation_key", "started", "queue", '
         '"user", "node", "instance_type", "resources") VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, '
         "{j}) ON CONFLICT DO NOTHING", ("rm_id", "partition", "app_id", "allocation_key", "at", "queue",
                                          "user", "node", "instance_type", "resources")),
    ),
    "app_rejected": (
        ('UPDATE applications SET "queue" = {p}, "user" = {p}, "groups" = {j}, "tags" = {j}, '
         '"state" = \'Rejected\', "submitted" = {p}, "accepted" = NULL, "running" = NULL, "finished" = {p}, '
         '"reason" = {p} WHERE ' + _KEY + ' AND "finished" IS NOT NULL',
         ("queue", "user", "groups", "tags", "at", "at", "reason", "rm_id", "partition", "app_id")),
        ('INSERT INTO applications ("rm_id", "partition", "app_id", "queue", "user", "groups", "tags", '
         '"state", "submitted", "finished", "reason") VALUES ({p}, {p}, {p}, {p}, {p}, {j}, {j}, '
         "'Rejected', {p}, {p}, {p}) ON CONFLICT DO NOTHING",
         ("rm_id", "partition", "app_id", "queue", "user", "groups", "tags", "at", "at", "reason")),
    ),
    "alloc_start": (
        ('INSERT INTO allocations ("rm_id", "partition", "app_id", "allocation_key", "started", "queue", '
         '"user", "node", "instance_type", "resources") VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, '
         "{j}) ON CONFLICT DO NOTHING", FIELDS["alloc_start"]),
    ),
    "alloc_end": (
        ('UPDATE allocations SET "ended" = {p}, "termination" = {p} WHERE ' + _KEY
         + ' AND "allocation_key" = {p} AND "ended" IS NULL',
         ("at", "termination", "rm_id", "partition", "app_id", "allocation_key")),
    ),
    "event": (
        ('INSERT INTO events ("digest", "at", "rm_id", "type", "object_id", "change_type", "change_detail", '
         '"message", "reference_id", "resource") VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {j}) '
         "ON CONFLICT DO NOTHING", FIELDS["event"]),
    ),
    "queue_sample": (
        ('INSERT INTO queue_usage ("rm_id", "partition", "queue", "at", "allocated", "pending") '
         "VALUES ({p}, {p}, {p}, {p}, {j}, {j}) ON CONFLICT DO NOTHING", FIELDS["queue_sample"]),
    ),
    "config_change": (
        ('INSERT INTO config_changes ("rm_id", "at", "who", "diff", "change", "config") '
         "VALUES ({p}, {p}, {p}, {p}, {p}, {p}) ON CONFLICT DO NOTHING", FIELDS["config_change"]),
    ),
}  # fmt: skip


class _Statement(NamedTuple):
    sql: str
    picks: tuple[int, ...]  # which of the kind's fields each parameter is
    identity: bool  # the parameters are the kind's fields as they are (no picking)


def _statements(dialect: str) -> Mapping[str, tuple[_Statement, ...]]:
    """The SQL of each write kind in the dialect's parameter style."""
    p, j = ("%s", "CAST(%s AS JSON)") if dialect == "postgresql" else ("?", "?")
    out = {}
    for kind, statements in _SQL.items():
        fields = FIELDS[kind]
        made = []
        for sql, names in statements:
            picks = tuple(fields.index(n) for n in names)
            made.append(_Statement(sql.format(p=p, j=j), picks, picks == tuple(range(len(fields)))))
        out[kind] = tuple(made)
    return out


def encode(value: Any) -> str:
    """A JSON field's text."""
    return orjson.dumps(value).decode()


def _json_encoded(row: tuple[Any, ...], json_at: tuple[int, ...]) -> tuple[Any, ...]:
    """The row with its JSON fields as text (a mapping left by the recorder encoded)."""
    for i in json_at:
        if type(row[i]) is not str:
            return tuple(
                orjson.dumps(v, default=dict).decode() if i in json_at and type(v) is not str else v
                for i, v in enumerate(row)
            )
    return row


def row_of(kind: str, params: Mapping[str, Any] | tuple[Any, ...]) -> tuple[Any, ...]:
    """An op's parameters as the tuple its statements take, every JSON field text (what cannot be
    encoded raises here, before any write)."""
    row = as_row(kind, params)
    json_at = _JSON_AT[kind]
    return _json_encoded(row, json_at) if json_at else row


def as_row(kind: str, params: Mapping[str, Any] | tuple[Any, ...]) -> tuple[Any, ...]:
    """An op's parameters as its kind's tuple (a dict's JSON fields encoded)."""
    if isinstance(params, tuple):
        return params
    return tuple(encode(params[f]) if f in JSON_FIELDS else params[f] for f in FIELDS[kind])
