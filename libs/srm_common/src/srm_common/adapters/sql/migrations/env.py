"""Alembic environment for the SQL projection; run by ``SqlProjection`` or the alembic CLI.

``SqlProjection`` passes its open connection in ``config.attributes["connection"]`` so the
upgrade runs on the caller's engine (and, for SQLite ``:memory:``, on the same database).
Without one, the URL comes from the ``sqlalchemy.url`` option, which lets an operator run
``alembic upgrade head --sql`` against a PostgreSQL URL to review the DDL first.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine, pool
from srm_common.adapters.sql.schema import VERSION_TABLE, metadata

config = context.config


def _configure(**kwargs: object) -> None:
    context.configure(
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        compare_type=True,
        **kwargs,
    )


def run_offline() -> None:
    _configure(url=config.get_main_option("sqlalchemy.url"), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online(connection: Connection) -> None:
    # SQLite cannot ALTER most things in place; batch mode rebuilds the table instead.
    _configure(connection=connection, render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
elif (given := config.attributes.get("connection")) is not None:
    run_online(given)
else:
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "", poolclass=pool.NullPool)
    try:
        with engine.begin() as connection:
            run_online(connection)
    finally:
        engine.dispose()
