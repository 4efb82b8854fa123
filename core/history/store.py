"""The history database: opened and migrated at start, written in batches by the recorder's thread,
read by the REST API and `pykorn history`. Blocking (SQLAlchemy's engine): callers on the event loop
go through a thread.

A write is a list of `Op`s, each a statement's kind and its parameters; a batch runs in one
transaction, each kind as one executemany. Every statement is idempotent (core.history.tables): a
batch written twice, or the same facts sent again after a restart, leave the same rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, and_, bindparam, create_engine, delete, event, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql import Executable

from core.history.tables import allocations, applications, config_changes, events, queue_usage

MIGRATIONS = Path(__file__).parent / "migrations"
TERMINAL = ("Completed", "Failed", "Rejected", "Expired")


class Op(NamedTuple):
    kind: str  # one of STATEMENTS' keys
    params: dict[str, Any]


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
    def write(self, ops: Sequence[Op]) -> None:
        """One transaction: the ops' statements in order of first appearance, each kind at once."""
        by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for op in ops:
            by_kind[op.kind].append(op.params)
        with self.engine.begin() as connection:
            for kind, params in by_kind.items():
                if kind not in _BY_COLUMN:  # their own bind names (a column's name is the SET's own)
                    params = [{f"p_{k}": v for k, v in p.items()} for p in params]
                for statement in self._statements[kind]:
                    connection.execute(statement, params)

    def prune(self, before: float) -> int:
        """Records older than `before` gone: finished applications, ended allocations, samples, events
        and configuration changes; how many rows went."""
        gone = 0
        with self.engine.begin() as connection:
            for statement in (
                delete(applications).where(applications.c.finished < before),
                delete(allocations).where(allocations.c.ended < before),
                delete(queue_usage).where(queue_usage.c.at < before),
                delete(events).where(events.c.at < before),
                delete(config_changes).where(config_changes.c.at < before),
            ):
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
    ) -> tuple[int, list[dict[str, Any]]]:
        """(how many match, the page): applications submitted in [since, until), newest first."""
        c = applications.c
        where = []
        for column, value in ((c.partition, partition), (c.queue, queue), (c.user, user), (c.state, state)):
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

    def application(self, partition: str, app_id: str) -> dict[str, Any] | None:
        """One application (of any RM) with its allocations and its events, oldest first."""
        c = applications.c
        with self.engine.connect() as connection:
            row = connection.execute(
                select(applications).where(c.partition == partition, c.app_id == app_id).limit(1)
            ).first()
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

    def queue_usage(self, partition: str, queue: str, since: float, until: float) -> list[dict[str, Any]]:
        q = queue_usage.c
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(q.at, q.allocated, q.pending)
                .where(q.partition == partition, q.queue == queue, q.at >= since, q.at < until)
                .order_by(q.at)
            )
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

    def counts(self) -> dict[str, int]:
        """Rows per table (the benchmarks and the demo's summary)."""
        with self.engine.connect() as connection:
            return {
                table.name: int(connection.execute(select(func.count()).select_from(table)).scalar_one())
                for table in (applications, allocations, queue_usage, events, config_changes)
            }


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


def _insert(dialect: str, table: Any) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING, in the dialect's words."""
    return (
        postgresql.insert(table) if dialect == "postgresql" else sqlite.insert(table)
    ).on_conflict_do_nothing()


def _statements(dialect: str) -> Mapping[str, Iterable[Executable]]:
    """Each write kind's statements (run in order, each with the kind's parameter list)."""
    ap, al = applications.c, allocations.c
    app_key = and_(ap.rm_id == _p("rm_id"), ap.partition == _p("partition"), ap.app_id == _p("app_id"))
    alloc_key = and_(al.rm_id == _p("rm_id"), al.partition == _p("partition"), al.app_id == _p("app_id"))
    return {
        # A new application; an ID used again after its application finished starts its row over.
        "app_new": (
            update(applications)
            .where(app_key, ap.finished.is_not(None))
            .values(
                queue=_p("queue"),
                user=_p("user"),
                groups=_p("groups"),
                tags=_p("tags"),
                state="New",
                submitted=_p("at"),
                accepted=None,
                running=None,
                finished=None,
                reason=None,
            ),
            _insert(dialect, applications).values(
                rm_id=_p("rm_id"),
                partition=_p("partition"),
                app_id=_p("app_id"),
                queue=_p("queue"),
                user=_p("user"),
                groups=_p("groups"),
                tags=_p("tags"),
                state="New",
                submitted=_p("at"),
            ),
        ),
        "app_accepted": (
            update(applications)
            .where(app_key)
            .values(state="Accepted", accepted=func.coalesce(ap.accepted, _p("at"))),
        ),
        "app_running": (
            update(applications)
            .where(app_key)
            .values(state="Running", running=func.coalesce(ap.running, _p("at"))),
        ),
        "app_state": (update(applications).where(app_key).values(state=_p("state")),),
        # Finished (Completed, Failed, Rejected, Expired): its allocations still open end with it.
        "app_finished": (
            update(applications)
            .where(app_key)
            .values(state=_p("state"), finished=func.coalesce(ap.finished, _p("at")), reason=_p("reason")),
            update(allocations)
            .where(alloc_key, al.ended.is_(None))
            .values(ended=_p("at"), termination="APPLICATION_ENDED"),
        ),
        # Refused at once (never New in the core): a row of its own, finished.
        "app_rejected": (
            _insert(dialect, applications).values(
                rm_id=_p("rm_id"),
                partition=_p("partition"),
                app_id=_p("app_id"),
                queue=_p("queue"),
                user=_p("user"),
                groups=_p("groups"),
                tags=_p("tags"),
                state="Rejected",
                submitted=_p("at"),
                finished=_p("at"),
                reason=_p("reason"),
            ),
        ),
        "alloc_start": (
            _insert(dialect, allocations).values(
                rm_id=_p("rm_id"),
                partition=_p("partition"),
                app_id=_p("app_id"),
                allocation_key=_p("allocation_key"),
                started=_p("at"),
                queue=_p("queue"),
                user=_p("user"),
                node=_p("node"),
                instance_type=_p("instance_type"),
                resources=_p("resources"),
            ),
        ),
        "alloc_end": (
            update(allocations)
            .where(alloc_key, al.allocation_key == _p("allocation_key"), al.ended.is_(None))
            .values(ended=_p("at"), termination=_p("termination")),
        ),
        "event": (_insert(dialect, events),),
        "queue_sample": (_insert(dialect, queue_usage),),
        "config_change": (_insert(dialect, config_changes),),
    }


_BY_COLUMN = frozenset({"event", "queue_sample", "config_change"})  # plain inserts: parameters by column


def _p(name: str) -> Any:
    return bindparam(f"p_{name}")
