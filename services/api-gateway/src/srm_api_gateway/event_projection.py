"""The event logs in the gateway's SQL read model: every event as one ``srm_events`` row
of its log, and the state after the last ones (members, assignments, halted partitions)
in its tables.

Each target cluster's log is projected under its alias, the single log of an earlier
release under ``''``. A log's position is its largest stored row offset, written in the
same transaction as the rows, so events offered again after a restart are skipped. A
restored log (``srm-control restore``) is projected after the lost one under the same
name, so each log stays one history: a row's offset is the restored log's first row
plus the event's offset there::

    log backup: lost log L1      offsets 0..41    rows 0..41
                restored log L2  offsets 0..9     rows 42..51   (restored_from L1)

The model also remembers *which* log it followed under each name
(:meth:`EventProjection.known_log`), so a gateway restarted after a log was replaced
reports it lost instead of folding it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, delete, insert
from srm_common.adapters.sql.projection import ProjectedEvent, SqlProjection
from srm_common.adapters.sql.schema import assignments, drivers, halts
from srm_common.control.events import Envelope, LogStarted, decode, describe, encode
from srm_common.control.history import combined
from srm_common.control.schema import EventDecodeError
from srm_common.control.state import ControlState

log = logging.getLogger(__name__)

# The name under which the single log of an earlier release is stored.
SINGLE = ""


def projected(envelope: Envelope, offset: int, log_name: str = SINGLE) -> ProjectedEvent:
    event = envelope.event
    return ProjectedEvent(
        log=log_name,
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
    """Appends folded events of every log to ``db``; events not yet stored wait in
    :meth:`project`."""

    def __init__(self, db: SqlProjection) -> None:
        self.db = db
        self._pending: list[tuple[str, Envelope]] = []
        # The newest state of each target's log (the current-state tables combine them).
        self._states: dict[str, ControlState] = {}
        self._changed = False
        self._base: dict[str, int] = {}  # per log: row offset of its current log's offset 0
        self._known = self._read_known_logs()
        self._cache: tuple[tuple[int, int], dict[str, list[Envelope]]] | None = None

    @property
    def pending(self) -> int:
        return len(self._pending)

    def known_log(self, name: str = SINGLE) -> str | None:
        """The log id of the last log projected under ``name``; ``""`` when it holds
        events of a log without an id; None when it holds nothing."""
        return self._known.get(name)

    def offer(self, name: str, envelopes: Sequence[Envelope], state: ControlState | None) -> None:
        """Queue ``envelopes`` of log ``name`` with ``state``, the log's state after the
        last of them, for the next :meth:`flush`."""
        self._pending.extend((name, e) for e in envelopes)
        if state is not None and name != SINGLE:
            self._states[name] = state
            self._changed = True

    def project(self, name: str, envelopes: Sequence[Envelope], state: ControlState | None) -> int:
        """:meth:`offer`, then :meth:`flush`."""
        self.offer(name, envelopes, state)
        return self.flush()

    def flush(self) -> int:
        """Store what was offered (and any that waited); the rows written. Database
        errors propagate (SrmError) and the events wait for the next call, so nothing is
        lost while the database is away."""
        if not self._pending and not self._changed:
            return 0
        base, known = dict(self._base), dict(self._known)
        rows = []
        for log_name, envelope in self._pending:
            start = base.get(log_name, 0)
            if isinstance(envelope.event, LogStarted):
                start = base[log_name] = self._base_of(log_name, envelope, start)
                known[log_name] = envelope.event.log_id
            rows.append(projected(envelope, start + envelope.offset, log_name))
            if known.get(log_name) is None:
                known[log_name] = ""  # a log older than log ids: it existed
        current = combined(self._states.values()) if self._changed else None
        written = self.db.apply(rows, lambda c: _replace_state(c, current) if current else None)
        self._base, self._known = base, known
        self._pending.clear()
        self._changed = False
        return written

    def histories(self) -> dict[str, list[Envelope]]:
        """Every stored event by log, each by row offset (the audit trail across restored
        logs).

        Decoded again only when the table changed; a row this release cannot decode (a
        newer gateway wrote it) is skipped with a warning, as log readers skip records."""
        status = self.db.status()
        key = (status.events, status.last_offset)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        found: dict[str, list[Envelope]] = {}
        for name, values in self.db.values_by_log().items():
            for offset, value in values:
                try:
                    found.setdefault(name, []).append(decode(value, offset=offset))
                except EventDecodeError as exc:
                    log.warning("read model: skipped row %d of log %r: %s", offset, name, exc)
        self._cache = (key, found)
        return found

    def _read_known_logs(self) -> dict[str, str | None]:
        known: dict[str, str | None] = {}
        for name in self.db.values_by_log():
            starts = self.db.values_of_type(LogStarted.TYPE, name)
            if not starts:
                known[name] = ""
                continue
            offset, value = starts[-1]
            event = decode(value, offset=offset).event
            known[name] = event.log_id if isinstance(event, LogStarted) else ""
        return known

    def _base_of(self, name: str, start: Envelope, base: int) -> int:
        """Where the log that ``start`` (a log.started) belongs to begins in the rows of
        ``name``."""
        event = start.event
        assert isinstance(event, LogStarted)
        for row, value in reversed(self.db.values_of_type(LogStarted.TYPE, name)):
            known = decode(value, offset=row).event
            if isinstance(known, LogStarted) and known.log_id == event.log_id:
                return row - start.offset  # projected before (a restart)
        if event.restored_from is not None:
            return self.db.last_offset(name) + 1 - start.offset  # after the lost log
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
