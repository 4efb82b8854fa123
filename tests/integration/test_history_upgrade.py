"""The history database upgraded between pykorn versions, on SQLite and a real PostgreSQL: a database
written by schema 1 (pykorn's first history, revision 0001) keeps every row when a newer core starts on
it (alembic upgrade head), ends with exactly the schema core.history.tables declares, and is written
and read as a new one is; and down to schema 1 and up again."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from core.history.store import MIGRATIONS, HistoryStore
from core.history.tables import metadata
from pykorn_cli.arg_types import history_url
from tests.integration.postgres import PostgresServer


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/history.db"
    server: PostgresServer = request.getfixturevalue("postgres")
    return history_url(server.create_database("history_upgrade"))


def _to(url: str, revision: str, down: bool = False) -> None:
    engine = create_engine(url)
    with engine.begin() as connection:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = connection
        (command.downgrade if down else command.upgrade)(config, revision)
    engine.dispose()


# What a pykorn of schema 1 wrote: its tables' columns, nothing newer.
SCHEMA_1_ROWS = (
    """INSERT INTO applications (rm_id, "partition", app_id, queue, "user", groups, tags, state, submitted,
       running, finished) VALUES ('rm', 'default', 'old-job', 'root.batch', 'alice', '["ml"]', '{}',
       'Completed', 100.0, 101.0, 200.0)""",
    """INSERT INTO allocations (rm_id, "partition", app_id, allocation_key, started, queue, "user", node,
       instance_type, resources, ended, termination) VALUES ('rm', 'default', 'old-job', 'a1', 101.0,
       'root.batch', 'alice', 'node-1', 'm5.large', '{"memory": 1024}', 200.0, 'STOPPED')""",
    """INSERT INTO config_changes (rm_id, at, who, diff) VALUES ('rm', 50.0, 'ipv4:10.0.0.1:5000',
       '+queues')""",
)


def test_a_schema_1_database_keeps_its_rows_through_the_upgrade(url: str) -> None:
    _to(url, "0001")
    engine = create_engine(url)
    with engine.begin() as connection:
        for statement in SCHEMA_1_ROWS:
            connection.execute(text(statement))
    engine.dispose()

    store = HistoryStore(url)
    store.migrate()  # what a newer core does at its start
    with store.engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), metadata) == []
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0002"
    # The rows written before: read as the REST API reads them.
    total, apps = store.applications(user="alice")
    assert total == 1 and apps[0]["state"] == "Completed" and apps[0]["groups"] == ["ml"]
    found = store.application("default", "old-job", rm_id="rm")
    assert found is not None
    assert [(a["allocation_key"], a["resources"], a["ended"]) for a in found["allocations"]] == [
        ("a1", {"memory": 1024}, 200.0)
    ]
    (old,) = store.config_changes("rm")
    assert (old["who"], old["change"], old["diff"]) == ("ipv4:10.0.0.1:5000", None, "+queues")
    assert store.last_config("rm") is None  # schema 1 kept no text: a registration records in full
    # Written as a new database is.
    store.write([("config_change", ("rm", 60.0, "CN=rm (ipv4:10.0.0.2:1)", "+more", "updated", "q: 1\n"))])
    assert store.last_config("rm") == "q: 1\n"
    assert store.prune(before=150.0) == 1  # the old config change (the newest per RM is kept)
    assert [c["at"] for c in store.config_changes("rm")] == [60.0]
    store.close()


def test_down_to_schema_1_and_up_again(url: str) -> None:
    HistoryStore(url).migrate()
    _to(url, "0001", down=True)
    engine = create_engine(url)
    assert {c["name"] for c in inspect(engine).get_columns("config_changes")} == {
        "rm_id",
        "at",
        "who",
        "diff",
    }
    engine.dispose()
    store = HistoryStore(url)
    store.migrate()
    with store.engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), metadata) == []
    store.close()
