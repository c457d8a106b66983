"""Keeps the SQL projection of the event log up to date as a coordinator folds it.

Every coordinator (leader or standby) projects what it reads, so the history survives any
one of them; the gateway reads the same tables. A database that fails is logged and
retried with the next events, and never stops the coordinator: the log stays the truth.

The projection is also the coordinator's memory of *which* log it followed
(:meth:`Projector.known_log`): restarted after the event log was deleted, it reports the
log lost instead of starting an empty one. A restored log (``srm-control restore``) is
projected after the lost one, so the table stays one history: a row's offset is the
restored log's first row plus the event's offset in that log.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from srm_common.adapters.sql.projection import ProjectedEvent, SqlProjection
from srm_common.control.events import Envelope, LogStarted, decode, describe, encode
from srm_common.errors import SrmError

log = logging.getLogger(__name__)


def projected(envelope: Envelope, offset: int | None = None) -> ProjectedEvent:
    event = envelope.event
    return ProjectedEvent(
        offset=envelope.offset if offset is None else offset,
        at_ms=envelope.at_ms,
        type=event.TYPE,
        version=event.VERSION,
        by=envelope.by,
        flow=getattr(event, "flow", None),
        summary=describe(envelope),
        value=encode(envelope),
    )


class Projector:
    """Appends folded events to a :class:`SqlProjection`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.projection = SqlProjection(url)
        self._pending: list[Envelope] = []
        self._base = 0  # row offset of the current log's offset 0

    def known_log(self) -> str | None:
        """The log id of the last log projected; ``""`` when the projection holds events
        of a log without an id; None when it holds nothing (or cannot be read)."""
        try:
            if not self.projection.status().events:
                return None
            starts = self.projection.values_of_type(LogStarted.TYPE)
        except SrmError as exc:
            log.error("SQL projection %s: %s (no memory of the last log)", self.url, exc)
            return None
        if not starts:
            return ""
        event = decode(starts[-1][1]).event
        return event.log_id if isinstance(event, LogStarted) else ""

    def project(self, envelopes: Iterable[Envelope]) -> None:
        self._pending.extend(envelopes)
        base = self._base
        try:
            rows = []
            for envelope in self._pending:
                if isinstance(envelope.event, LogStarted):
                    base = self._base_of(envelope, base)
                rows.append(projected(envelope, base + envelope.offset))
            self.projection.apply(rows)
        except SrmError as exc:
            log.error("SQL projection %s: %s (retrying with the next events)", self.url, exc)
            return
        self._base = base
        self._pending.clear()

    def _base_of(self, start: Envelope, base: int) -> int:
        """Where the log that ``start`` (a log.started) belongs to begins in the table."""
        event = start.event
        assert isinstance(event, LogStarted)
        for row, value in reversed(self.projection.values_of_type(LogStarted.TYPE)):
            known = decode(value).event
            if isinstance(known, LogStarted) and known.log_id == event.log_id:
                return row - start.offset  # projected before (a restart)
        if event.restored_from is not None:
            return self.projection.last_offset() + 1 - start.offset  # after the lost log
        return base  # the first log, or one older than log ids getting its id

    def close(self) -> None:
        self.projection.close()
