"""SQL read model of the control event log: audit history and replay, via SQLAlchemy."""

from srm_common.adapters.sql.projection import ProjectedEvent, ProjectionStatus, SqlProjection

__all__ = ["ProjectedEvent", "ProjectionStatus", "SqlProjection"]
