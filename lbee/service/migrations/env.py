"""Alembic environment: migrations run on the connection that `lbee.service.migrate.upgrade` passes in."""

from alembic import context

connection = context.config.attributes["connection"]
# render_as_batch: SQLite alters tables by copying them, which Alembic's batch mode does.
context.configure(connection=connection, target_metadata=None, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
