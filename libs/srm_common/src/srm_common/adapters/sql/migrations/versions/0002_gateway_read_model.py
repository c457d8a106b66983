"""The gateway's read model: projection positions, metric windows, the current state.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22

A database the coordinator projected into (0001: ``srm_events`` only) keeps its rows;
the gateway carries on projecting from the last stored offset.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "srm_positions",
        sa.Column("source", sa.String(255), primary_key=True),
        sa.Column("position", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "srm_metric_windows",
        sa.Column("level", sa.String(16), primary_key=True),
        sa.Column("subject", sa.String(1024), primary_key=True),
        sa.Column("window_ms", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("start_ms", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("cluster", sa.String(255), nullable=False),
        sa.Column("closed", sa.Boolean(), nullable=False),
        sa.Column("figures", sa.Text(), nullable=False),
    )
    op.create_index("ix_srm_metric_windows_start_ms", "srm_metric_windows", ["start_ms"])
    op.create_table(
        "srm_drivers",
        sa.Column("driver", sa.String(255), primary_key=True),
        sa.Column("url", sa.String(1024), nullable=True),
        sa.Column("host", sa.String(255), nullable=True),
        sa.Column("instance", sa.String(255), nullable=True),
    )
    op.create_table(
        "srm_assignments",
        sa.Column("task", sa.String(1024), primary_key=True),
        sa.Column("driver", sa.String(255), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "srm_halts",
        sa.Column("flow", sa.String(255), primary_key=True),
        sa.Column("topic", sa.String(255), primary_key=True),
        sa.Column("partition", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("driver", sa.String(255), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("srm_halts")
    op.drop_table("srm_assignments")
    op.drop_table("srm_drivers")
    op.drop_index("ix_srm_metric_windows_start_ms", table_name="srm_metric_windows")
    op.drop_table("srm_metric_windows")
    op.drop_table("srm_positions")
