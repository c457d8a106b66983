"""Keeps the SQL projection of the event log up to date as a coordinator folds it.

Every coordinator (leader or standby) projects what it reads, so the history survives any
one of them; the gateway reads the same tables. A database that fails is logged and
retried with the next events, and never stops the coordinator: the log stays the truth.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from srm_common.adapters.sql.projection import ProjectedEvent, SqlProjection
from srm_common.control.events import Envelope, describe, encode
from srm_common.errors import SrmError

log = logging.getLogger(__name__)


def projected(envelope: Envelope) -> ProjectedEvent:
    event = envelope.event
    return ProjectedEvent(
        offset=envelope.offset,
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

    def project(self, envelopes: Iterable[Envelope]) -> None:
        self._pending.extend(envelopes)
        try:
            self.projection.apply(projected(e) for e in self._pending)
        except SrmError as exc:
            log.error("SQL projection %s: %s (retrying with the next events)", self.url, exc)
            return
        self._pending.clear()

    def close(self) -> None:
        self.projection.close()
