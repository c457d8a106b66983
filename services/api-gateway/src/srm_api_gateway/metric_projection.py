"""Closed windows of the aggregated metrics in the gateway's SQL read model, so metric
series outlive a gateway restart and the aggregated topic's retention.

Records arrive with where they were read (cluster, partition, offset). Each source's
position (``srm_positions``, ``metrics|<cluster>|<partition>``) is written in the same
transaction as the windows, and a record at or below it is skipped: a record read again
after a restart writes nothing. A window's key is the aggregate's (level, subject, size,
start); the latest closed record of a key wins, as on the compacted topic (a late
contribution closes a window again with more in it). Open windows are not stored: the
gateway's memory answers for those while they are live. Nor are partition windows: no
answer reads a partition's history, and 10,000 partitions would be 10,000 rows a minute
(their topic's windows hold their sums).

Kept for :data:`KEEP_MS` (1-minute windows 7 days, 1-hour windows 400 days, measured
from the newest window stored), pruned at most every :data:`PRUNE_EVERY_MS` of window
time, so the table stays bounded however long the system runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from srm_common.adapters.sql.projection import SqlProjection
from srm_common.adapters.sql.schema import metric_windows, positions
from srm_common.metrics.aggregate import Aggregate, AggregateError, Figures
from srm_common.metrics.raw import TopicMapping

MINUTE = 60_000
HOUR = 3_600_000
DAY = 24 * HOUR
KEEP_MS: Mapping[int, int] = {MINUTE: 7 * DAY, HOUR: 400 * DAY}
PRUNE_EVERY_MS = 10 * MINUTE


@dataclass(frozen=True)
class Read:
    """One record of an aggregated metrics topic and where it was read."""

    cluster: str
    partition: int
    offset: int
    record: Aggregate | TopicMapping

    @property
    def source(self) -> str:
        return f"metrics|{self.cluster}|{self.partition}"


def subject_key(subject: Mapping[str, str | int]) -> str:
    return json.dumps(dict(subject), sort_keys=True, separators=(",", ":"))


class MetricProjection:
    """Stores closed windows; records waiting for the database are kept by key (the
    latest wins), so what waits is bounded by the number of distinct windows."""

    def __init__(self, db: SqlProjection) -> None:
        self.db = db
        self._windows: dict[tuple[str, str, int, int], Read] = {}
        self._positions: dict[str, int] = {}
        self._pruned_at = 0  # the newest window start when windows were last pruned

    @property
    def pending(self) -> int:
        return len(self._windows)

    def add(self, reads: Sequence[Read]) -> None:
        for read in reads:
            self._positions[read.source] = max(read.offset, self._positions.get(read.source, -1))
            record = read.record
            if isinstance(record, Aggregate) and record.closed and record.level != "partition":
                key = (record.level, subject_key(record.subject), record.window_ms, record.start_ms)
                self._windows[key] = read

    def flush(self, reads: Sequence[Read] = ()) -> int:
        """Store what waits (and ``reads``) in one transaction; the windows written.

        Database errors propagate (SrmError) and everything keeps waiting."""
        self.add(reads)
        if not self._positions:
            return 0
        # Positions only grow, so a record below the stored one is already in the table.
        with self.db.translated("store metric windows"), self.db.engine.begin() as connection:
            stored = dict(
                connection.execute(
                    select(positions.c.source, positions.c.position).where(
                        positions.c.source.in_(list(self._positions))
                    )
                ).all()
            )
            rows = [
                _row_of(read.cluster, read.record)
                for read in self._windows.values()
                if isinstance(read.record, Aggregate) and read.offset > stored.get(read.source, -1)
            ]
            _upsert(connection, rows)
            newest = max((int(r["start_ms"]) for r in rows), default=0)  # type: ignore[call-overload]
            if newest >= self._pruned_at + PRUNE_EVERY_MS:
                _prune(connection, newest)
                self._pruned_at = newest
            for source, position in self._positions.items():
                if source not in stored:
                    connection.execute(insert(positions), {"source": source, "position": position})
                elif position > stored[source]:
                    connection.execute(
                        update(positions)
                        .where(positions.c.source == source)
                        .values(position=position)
                    )
        self._windows.clear()
        self._positions.clear()
        return len(rows)

    def positions(self) -> dict[str, int]:
        with self.db.translated("read positions"), self.db.engine.connect() as connection:
            return dict(connection.execute(select(positions.c.source, positions.c.position)).all())

    def windows(
        self,
        level: str,
        subject: Mapping[str, str | int],
        window_ms: int,
        from_ms: int,
        to_ms: int,
    ) -> list[Aggregate]:
        """The stored windows of the subject that overlap [from_ms, to_ms), by start."""
        table = metric_windows.c
        query = (
            select(table.start_ms, table.closed, table.figures)
            .where(
                table.level == level,
                table.subject == subject_key(subject),
                table.window_ms == window_ms,
                table.start_ms < to_ms,
                table.start_ms > from_ms - window_ms,
            )
            .order_by(table.start_ms)
        )
        with self.db.translated("read metric windows"), self.db.engine.connect() as connection:
            found = connection.execute(query).all()
        result = []
        for start_ms, closed, figures in found:
            try:
                parsed = Figures.from_json(json.loads(figures))
            except (AggregateError, ValueError):
                continue  # a row a newer gateway wrote: its live value is in memory
            result.append(Aggregate(level, window_ms, start_ms, dict(subject), closed, parsed))
        return result


def _prune(connection: Connection, newest_ms: int) -> None:
    table = metric_windows.c
    for size, keep in KEEP_MS.items():
        old = delete(metric_windows).where(
            table.window_ms == size, table.start_ms < newest_ms - keep
        )
        connection.execute(old)


def _row_of(cluster: str, aggregate: Aggregate) -> dict[str, object]:
    return {
        "level": aggregate.level,
        "subject": subject_key(aggregate.subject),
        "window_ms": aggregate.window_ms,
        "start_ms": aggregate.start_ms,
        "cluster": cluster,
        "closed": aggregate.closed,
        "figures": json.dumps(aggregate.figures.to_json(), separators=(",", ":")),
    }


def _upsert(connection: Connection, rows: list[dict[str, object]]) -> None:
    if not rows:
        return
    name = connection.dialect.name
    if name in ("sqlite", "postgresql"):
        dialect = sqlite if name == "sqlite" else postgresql
        statement = dialect.insert(metric_windows)
        keys = ["level", "subject", "window_ms", "start_ms"]
        statement = statement.on_conflict_do_update(
            index_elements=keys,
            set_={c: statement.excluded[c] for c in ("cluster", "closed", "figures")},
        )
        connection.execute(statement, rows)
        return
    for row in rows:  # another database: portable, one key at a time
        table = metric_windows.c
        connection.execute(
            delete(metric_windows).where(
                table.level == row["level"],
                table.subject == row["subject"],
                table.window_ms == row["window_ms"],
                table.start_ms == row["start_ms"],
            )
        )
        connection.execute(insert(metric_windows), row)
