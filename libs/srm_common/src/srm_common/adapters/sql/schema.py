"""The gateway's SQL read model as SQLAlchemy metadata: what the migrations must produce.

``srm_events``: one row per control event, keyed by its log (a target cluster's alias;
``''`` for the single log of an earlier release) and its position there, so the table is
both an audit trail and a replayable copy of every log (``value`` holds the stored
bytes). ``srm_drivers``, ``srm_assignments``, ``srm_halts``: the state after the last
projected event (members, which driver runs which task, halted partitions), replaced in
the same transaction as the events. ``srm_metric_windows``: closed windows of the
aggregated metrics (``figures`` is the aggregate codec's JSON), one row per window key,
the latest record winning; ``srm_positions`` holds how far each source (a partition of an
aggregated metrics topic) was projected, written with the rows, so a record read again
after a restart changes nothing. Column names avoid SQL keywords: the record field
``offset`` is ``log_offset`` and ``by`` is ``actor``. Types are portable (SQLite by
default, PostgreSQL by URL); ``tests/test_sql_projection.py`` compares this metadata
with the migrated schema so the two cannot drift.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
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
    Column("log", String(255), primary_key=True, server_default=""),
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

positions = Table(
    "srm_positions",
    metadata,
    Column("source", String(255), primary_key=True),
    Column("position", BigInteger, nullable=False),
)

metric_windows = Table(
    "srm_metric_windows",
    metadata,
    Column("level", String(16), primary_key=True),
    # The subject as sorted compact JSON ({"flow": "a->b", "topic": "t"}): one text key
    # for every level, compared by equality only.
    Column("subject", String(1024), primary_key=True),
    Column("window_ms", BigInteger, primary_key=True, autoincrement=False),
    Column("start_ms", BigInteger, primary_key=True, autoincrement=False),
    Column("cluster", String(255), nullable=False),
    Column("closed", Boolean, nullable=False),
    Column("figures", Text, nullable=False),
    Index("ix_srm_metric_windows_start_ms", "start_ms"),
)

drivers = Table(
    "srm_drivers",
    metadata,
    Column("driver", String(255), primary_key=True),
    Column("url", String(1024), nullable=True),
    Column("host", String(255), nullable=True),
    Column("instance", String(255), nullable=True),
)

assignments = Table(
    "srm_assignments",
    metadata,
    Column("task", String(1024), primary_key=True),
    Column("driver", String(255), nullable=False),
    Column("generation", BigInteger, nullable=False),
)

halts = Table(
    "srm_halts",
    metadata,
    Column("flow", String(255), primary_key=True),
    Column("topic", String(255), primary_key=True),
    Column("partition", Integer, primary_key=True, autoincrement=False),
    Column("kind", String(64), nullable=False),
    Column("reason", Text, nullable=False),
    Column("driver", String(255), nullable=True),
)
