"""The gateway's SQL read model: opened (and migrated) at start, fed by the event logs'
followers (one per target cluster, and the single log of an earlier release) and the
metrics follower, written in batches on a thread of its own, so neither
the readers nor the HTTP event loop ever wait for the database.

Faults:

* Unreachable or unusable at start: :class:`ReadModel` raises one ``SrmError`` line and
  the gateway exits 2 (a gateway that silently served no history would hide it).
* Lost while running: writes fail, ``status()`` (on ``/readyz``) says ``unreachable``
  with the reason, what was read waits in memory (events in order, metric windows by
  key) and is written when the database answers again, from the stored positions. The
  live API answers from memory meanwhile; history falls back to memory too.
* A row this release cannot read (a newer gateway wrote it) is skipped, as log readers
  skip what they cannot read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence

from srm_common.adapters.sql.projection import SqlProjection
from srm_common.config.control import LEGACY_PREFIX
from srm_common.control.events import Envelope
from srm_common.control.state import ControlState
from srm_common.errors import ConcurrencyError, SrmError
from srm_common.log_follower import Folded
from srm_common.metrics.aggregate import Aggregate
from srm_common.metrics.raw import TopicMapping

from srm_api_gateway.event_projection import SINGLE, EventProjection
from srm_api_gateway.metric_projection import MetricProjection, Read

log = logging.getLogger(__name__)

BATCH_S = 0.5
RETRY_S = 2.0
PROBE_S = 5.0  # an idle read model asks the database this often whether it answers


class ReadModel:
    """See the module docstring. ``on_events``/``on_metric`` are called by the readers'
    threads; ``history``/``windows`` by HTTP handlers (a worker thread each)."""

    def __init__(self, url: str, *, batch_s: float = BATCH_S, retry_s: float = RETRY_S) -> None:
        self.db = SqlProjection(url)
        try:
            self.events = EventProjection(self.db)
        except SrmError:
            self.db.close()
            raise
        self.metrics = MetricProjection(self.db)
        self._batch_s = batch_s
        self._retry_s = retry_s
        self._lock = threading.Lock()
        self._queued_events: list[tuple[str, list[Envelope], ControlState, bool]] = []
        self._queued_reads: list[Read] = []
        # Per log: envelopes of its follower's current history (since its last restart)
        # received, and how many of them are in the database: equal means up to date.
        self._received: dict[str, int] = {}
        self._stored: dict[str, int] = {}
        self._error: str | None = None
        self._failed_since: float | None = None
        self._probed = time.monotonic()
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="read-model", daemon=True)

    # -- fed by the readers ------------------------------------------------------------

    def on_fold(self, name: str, folded: Folded) -> None:
        """A batch the follower of log ``name`` folded (on its thread)."""
        self.on_events(name, folded.fresh, folded.state, folded.restarted)

    def on_events(
        self, name: str, fresh: Sequence[Envelope], state: ControlState, restarted: bool
    ) -> None:
        """``name``: the log (a target's alias; a name starting ``legacy@`` is the single
        log of an earlier release, stored as ``''``)."""
        stored_as = SINGLE if name.startswith(LEGACY_PREFIX) else name
        with self._lock:
            self._queued_events.append((stored_as, list(fresh), state, restarted))

    def on_metric(
        self, cluster: str, partition: int, offset: int, record: Aggregate | TopicMapping
    ) -> None:
        with self._lock:
            self._queued_reads.append(Read(cluster, partition, offset, record))

    # -- read by HTTP handlers ---------------------------------------------------------

    def history(self, counts: Mapping[str, int]) -> dict[str, list[Envelope]] | None:
        """Every event of the read model by log (``''``: the single log of an earlier
        release), when it holds the envelopes the followers hold (``counts``, by log name;
        and more: a lost log's); None when memory must answer."""
        if self._error is not None:
            return None
        for name, count in counts.items():
            stored_as = SINGLE if name.startswith(LEGACY_PREFIX) else name
            if self._stored.get(stored_as, 0) < count or self._received.get(stored_as, 0) < count:
                return None
        try:
            return self.events.histories()
        except SrmError as exc:
            log.warning("read model: %s (answering from memory)", exc)
            return None

    def windows(
        self,
        level: str,
        subject: Mapping[str, str | int],
        window_ms: int,
        from_ms: int,
        to_ms: int,
    ) -> list[Aggregate]:
        """Stored closed windows; none while the database does not answer."""
        if self._error is not None:
            return []
        try:
            return self.metrics.windows(level, subject, window_ms, from_ms, to_ms)
        except SrmError as exc:
            log.warning("read model: %s (answering from memory)", exc)
            return []

    def status(self) -> dict[str, object]:
        return {
            "database": self.db.url,
            "status": "unreachable" if self._error else "ok",
            "error": self._error,
            "events_waiting": self.events.pending + len(self._queued_events),
            "windows_waiting": self.metrics.pending + len(self._queued_reads),
            "up_to_date": self._error is None and self._stored == self._received,
        }

    def known_log(self, name: str) -> str | None:
        """The log id last projected under log ``name`` (see :meth:`on_events`)."""
        return self.events.known_log(SINGLE if name.startswith(LEGACY_PREFIX) else name)

    # -- the writer thread -------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        self.db.close()

    def flush(self) -> bool:
        """Write what is queued now; False (and the reason in ``status()``) if it failed."""
        with self._lock:
            batches, self._queued_events = self._queued_events, []
            reads, self._queued_reads = self._queued_reads, []
        for name, fresh, _state, restarted in batches:
            if restarted:
                self._received[name] = self._stored[name] = 0
            self._received[name] = self._received.get(name, 0) + len(fresh)
        self.metrics.add(reads)  # waits there if the events cannot be written
        try:
            for name, fresh, state, _restarted in batches:
                self.events.offer(name, fresh, state)
            written = self.events.flush()
            written += self.metrics.flush()
            now = time.monotonic()
            if not written and (self._error is not None or now - self._probed > PROBE_S):
                self._probed = now
                self.db.status()  # nothing to write: does the database still answer?
        except ConcurrencyError as exc:
            # Another gateway stored the same rows first (replicas sharing a database):
            # not an outage; the next batch re-reads the positions and skips them.
            log.info("read model: %s", exc)
            return False
        except SrmError as exc:
            if self._error is None:
                self._failed_since = time.monotonic()
                log.error("read model: %s (keeping what was read in memory; retrying)", exc)
            self._error = str(exc)
            return False
        if self._error is not None:
            log.warning(
                "read model: the database answers again after %.0f s; caught up",
                time.monotonic() - (self._failed_since or time.monotonic()),
            )
        self._error = None
        self._stored = dict(self._received)
        return True

    def _run(self) -> None:
        while not self.stop.is_set():
            self.stop.wait(self._batch_s if self.flush() else self._retry_s)
        self.flush()
