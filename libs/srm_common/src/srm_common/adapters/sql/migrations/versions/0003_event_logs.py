"""srm_events holds every log: one row per event of a log, keyed by (log, log offset).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

Each target cluster keeps its own event log now; the read model keeps them side by side
in one table. Rows projected before (the single log of an earlier release) keep their
offsets under ``log = ''``. The primary key changes, so the table is copied into a new
one and renamed (the one way both SQLite and PostgreSQL take).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

COLUMNS = "log_offset, at_ms, type, version, actor, flow, summary, value"


def _event_columns() -> list[sa.Column]:  # type: ignore[type-arg]
    """The columns both shapes share (a Column belongs to one table: built afresh each time)."""
    return [
        sa.Column("log_offset", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("type", sa.String(128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("actor", sa.String(255), nullable=True),
        sa.Column("flow", sa.String(255), nullable=True),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=False),
    ]


def _replace_events(copy: str) -> None:
    """srm_events becomes ``copy`` (already filled), with its indexes."""
    op.drop_index("ix_srm_events_flow", table_name="srm_events")
    op.drop_index("ix_srm_events_at_ms", table_name="srm_events")
    op.drop_table("srm_events")
    op.rename_table(copy, "srm_events")
    op.create_index("ix_srm_events_at_ms", "srm_events", ["at_ms"])
    op.create_index("ix_srm_events_flow", "srm_events", ["flow"])


def upgrade() -> None:
    op.create_table(
        "srm_events_by_log",
        sa.Column("log", sa.String(255), primary_key=True, server_default=""),
        *_event_columns(),
    )
    op.execute(
        f"INSERT INTO srm_events_by_log (log, {COLUMNS}) SELECT '', {COLUMNS} FROM srm_events"
    )
    _replace_events("srm_events_by_log")


def downgrade() -> None:
    op.create_table("srm_events_single", *_event_columns())
    op.execute(
        f"INSERT INTO srm_events_single ({COLUMNS}) SELECT {COLUMNS} FROM srm_events WHERE log = ''"
    )
    _replace_events("srm_events_single")
