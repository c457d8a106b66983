"""Create srm_events: one row per control event, keyed by its log offset.

Revision ID: 0001
Revises:
Create Date: 2024-11-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "srm_events",
        sa.Column("log_offset", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("type", sa.String(128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("actor", sa.String(255), nullable=True),
        sa.Column("flow", sa.String(255), nullable=True),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=False),
    )
    op.create_index("ix_srm_events_at_ms", "srm_events", ["at_ms"])
    op.create_index("ix_srm_events_flow", "srm_events", ["flow"])


def downgrade() -> None:
    op.drop_index("ix_srm_events_flow", table_name="srm_events")
    op.drop_index("ix_srm_events_at_ms", table_name="srm_events")
    op.drop_table("srm_events")
