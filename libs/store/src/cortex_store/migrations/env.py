"""Alembic environment: runs on the connection that `cortex_store.migrate` hands in."""

from alembic import context

from cortex_store.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, transactional_ddl=True)
with context.begin_transaction():
    context.run_migrations()
