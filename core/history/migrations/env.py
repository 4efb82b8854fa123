"""alembic's environment for the history database: always run by core.history.store.migrate with an
open connection (config.attributes["connection"]); there is no alembic.ini."""

from __future__ import annotations

from alembic import context

from core.history.tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
