"""The history database's schema: alembic's migrations bring an empty database to exactly the tables
core.history.tables declares (no difference alembic's autogenerate would find), again and again
without harm, and down and up again: what upgrading a database between pykorn versions runs."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from core.history.store import MIGRATIONS, HistoryStore
from core.history.tables import metadata


def _config(connection: object) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def test_the_migrations_make_exactly_the_declared_schema(tmp_path: Path) -> None:
    store = HistoryStore(f"sqlite:///{tmp_path}/h.db")
    store.migrate()
    store.migrate()  # a second start on the same database changes nothing
    with store.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), metadata)
    assert differences == []
    store.close()


def test_a_database_goes_down_to_nothing_and_up_again(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/h.db")
    with engine.begin() as connection:
        command.upgrade(_config(connection), "head")
    assert {"applications", "allocations", "queue_usage", "events", "config_changes"} <= set(
        inspect(engine).get_table_names()
    )
    with engine.begin() as connection:
        command.downgrade(_config(connection), "base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    with engine.begin() as connection:
        command.upgrade(_config(connection), "head")
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), metadata) == []
