"""The event log in the gateway's SQL read model: every event as one ``srm_events`` row,
and the state after the last one (members, assignments, halted partitions) in its tables.

The position is the row offset itself (the largest one stored), written in the same
transaction as the rows, so events offered again after a restart are skipped. A restored
log (``srm-control restore``) is projected after the lost one, so the table stays one
history: a row's offset is the restored log's first row plus the event's offset there::

    lost log L1      offsets 0..41    rows 0..41
    restored log L2  offsets 0..9     rows 42..51   (L2's log.started says restored_from L1)

The model also remembers *which* log it followed (:meth:`EventProjection.known_log`), so
a gateway restarted after the log was replaced reports it lost instead of folding it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, delete, insert
from srm_common.adapters.sql.projection import ProjectedEvent, SqlProjection
from srm_common.adapters.sql.schema import assignments, drivers, halts
from srm_common.control.events import Envelope, LogStarted, decode, describe, encode
from srm_common.control.schema import EventDecodeError
from srm_common.control.state import ControlState

log = logging.getLogger(__name__)


def projected(envelope: Envelope, offset: int) -> ProjectedEvent:
    event = envelope.event
    return ProjectedEvent(
        offset=offset,
        at_ms=envelope.at_ms,
        type=event.TYPE,
        version=event.VERSION,
        by=envelope.by,
        flow=getattr(event, "flow", None),
        summary=describe(envelope),
        value=encode(envelope),
    )


class EventProjection:
    """Appends folded events to ``db``; events not yet stored wait in :meth:`project`."""

    def __init__(self, db: SqlProjection) -> None:
        self.db = db
        self._pending: list[Envelope] = []
        self._state: ControlState | None = None
        self._base = 0  # row offset of the current log's offset 0
        self._known = self._read_known_log()
        self._cache: tuple[tuple[int, int], list[Envelope]] | None = None

    @property
    def pending(self) -> int:
        return len(self._pending)

    def known_log(self) -> str | None:
        """The log id of the last log projected; ``""`` when the table holds events of a
        log without an id; None when it holds nothing."""
        return self._known

    def project(self, envelopes: Sequence[Envelope], state: ControlState | None) -> int:
        """Store ``envelopes`` (and any that waited) with ``state``, the state after the
        last of them; the rows written. Database errors propagate (SrmError) and the
        events wait for the next call, so nothing is lost while the database is away."""
        self._pending.extend(envelopes)
        if state is not None:
            self._state = state
        if not self._pending and self._state is None:
            return 0
        base = self._base
        rows = []
        known = self._known
        for envelope in self._pending:
            if isinstance(envelope.event, LogStarted):
                base = self._base_of(envelope, base)
                known = envelope.event.log_id
            rows.append(projected(envelope, base + envelope.offset))
        if self._pending and known is None:
            known = ""  # a log older than log ids: it existed
        current = self._state
        written = self.db.apply(rows, lambda c: _replace_state(c, current) if current else None)
        self._base, self._known = base, known
        self._pending.clear()
        self._state = None
        return written

    def envelopes(self) -> list[Envelope]:
        """Every stored event, by row offset (the audit trail across restored logs).

        Decoded again only when the table changed; a row this release cannot decode (a
        newer gateway wrote it) is skipped with a warning, as log readers skip records."""
        status = self.db.status()
        key = (status.events, status.last_offset)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        found = []
        for offset, value in self.db.values_until():
            try:
                found.append(decode(value, offset=offset))
            except EventDecodeError as exc:
                log.warning("read model: skipped row %d: %s", offset, exc)
        self._cache = (key, found)
        return found

    def _read_known_log(self) -> str | None:
        if not self.db.status().events:
            return None
        starts = self.db.values_of_type(LogStarted.TYPE)
        if not starts:
            return ""
        offset, value = starts[-1]
        event = decode(value, offset=offset).event
        return event.log_id if isinstance(event, LogStarted) else ""

    def _base_of(self, start: Envelope, base: int) -> int:
        """Where the log that ``start`` (a log.started) belongs to begins in the table."""
        event = start.event
        assert isinstance(event, LogStarted)
        for row, value in reversed(self.db.values_of_type(LogStarted.TYPE)):
            known = decode(value, offset=row).event
            if isinstance(known, LogStarted) and known.log_id == event.log_id:
                return row - start.offset  # projected before (a restart)
        if event.restored_from is not None:
            return self.db.last_offset() + 1 - start.offset  # after the lost log
        return base  # the first log, or one older than log ids getting its id


def _replace_state(connection: Connection, state: ControlState) -> None:
    """The current-state tables become ``state``'s (they are small: rewritten whole)."""
    for table in (drivers, assignments, halts):
        connection.execute(delete(table))
    _insert(
        connection,
        drivers,
        (
            {"driver": d.driver, "url": d.url, "host": d.host, "instance": d.instance}
            for d in state.drivers.values()
        ),
    )
    _insert(
        connection,
        assignments,
        (
            {"task": task, "driver": driver, "generation": state.generation}
            for task, driver in state.assignment.items()
        ),
    )
    _insert(
        connection,
        halts,
        (
            {
                "flow": h.flow,
                "topic": h.topic,
                "partition": h.partition,
                "kind": h.kind,
                "reason": h.reason,
                "driver": h.driver,
            }
            for h in state.halts.values()
        ),
    )


def _insert(connection: Connection, table: object, rows: Iterable[dict[str, object]]) -> None:
    values = list(rows)
    if values:
        connection.execute(insert(table), values)  # type: ignore[arg-type]
