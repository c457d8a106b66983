"""The ``srm_events`` table as SQLAlchemy metadata: what the migrations must produce.

One row per control event, keyed by its position in the log, so the table is both an
audit trail and a replayable copy of the log (``value`` holds the stored bytes).
Column names avoid SQL keywords: the record field ``offset`` is ``log_offset`` and
``by`` is ``actor``. Types are portable (SQLite by default, PostgreSQL by URL);
``tests/test_sql_projection.py`` compares this metadata with the migrated schema so the
two cannot drift.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

# Alembic's bookkeeping table, named for this read model so another model's migrations
# can share the database without fighting over ``alembic_version``.
VERSION_TABLE = "srm_projection_version"

metadata = MetaData()

events = Table(
    "srm_events",
    metadata,
    Column("log_offset", BigInteger, primary_key=True, autoincrement=False),
    Column("at_ms", BigInteger, nullable=False),
    Column("type", String(128), nullable=False),
    Column("version", Integer, nullable=False),
    Column("actor", String(255), nullable=True),
    Column("flow", String(255), nullable=True),
    Column("summary", Text, nullable=False),
    Column("value", LargeBinary, nullable=False),
    Index("ix_srm_events_at_ms", "at_ms"),
    Index("ix_srm_events_flow", "flow"),
)
