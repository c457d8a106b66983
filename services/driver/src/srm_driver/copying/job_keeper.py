"""The copy job's life (the runtime thread, through
:meth:`~srm_driver.copying.service.CopyService.tick`): started once Spark is up, with a
slot for every core Spark has (asked every :data:`GROW_EVERY_S`), slots whose executor
Spark removed found every :data:`EXECUTORS_EVERY_S`, and restarted when it ends by itself.

A job that ended by itself is retired: its running partitions go back to pending and
nothing is reconciled until no slot of it can write any more (none runs on this host in
local mode, or its last lease and the write timeout ran out); then a new job starts and
the ledger forgets the old job's slots. At shutdown the slots finish what they sent; the
stop says whether that is proven (:meth:`JobKeeper.stop`)."""

from __future__ import annotations

import logging

from srm_common.errors import SrmError

from srm_driver.copying.ledger import Ledger
from srm_driver.copying.ports import CopyJob
from srm_driver.copying.slots import Slots

log = logging.getLogger(__name__)

# How often the driver asks Spark whether executors were added (a slot per new core).
GROW_EVERY_S = 2.0
# How often the driver asks Spark which executors it has (a slot whose executor Spark
# removed is lost at once, copying/slots.py).
EXECUTORS_EVERY_S = 1.0


class JobKeeper:
    """See the module docstring. ``id`` is the running job's (None between jobs),
    ``spark_up`` whether Spark started, ``fatal`` why it could not; ``stopping`` is set
    under the ledger's lock and read there."""

    def __init__(self, job: CopyJob, ledger: Ledger, slots: Slots, write_timeout_ms: int) -> None:
        self.job = job
        self._ledger = ledger
        self._slots = slots
        self._write_timeout_ms = write_timeout_ms
        self.id: str | None = None
        # Spark is up (it starts beside the flows: srm_driver.spark.SparkStart), or why it
        # could not start.
        self.spark_up = False
        self.fatal: str | None = None
        self.stopping = False
        self._retired_until: float | None = None
        self._grow_at = 0.0
        self._executors_at = 0.0

    def tick(self, now: float) -> None:
        """Keep the copy job running, with a slot for every core Spark has, and the
        partitions spread over the slots that report."""
        self._maintain(now)
        if self.id is None or self.stopping:
            return
        if now >= self._grow_at:
            self._grow_at = now + GROW_EVERY_S
            added = self.job.grow()  # outside the lock: it asks Spark
            if added:
                with self._ledger.lock:
                    self._slots.added(added)
        running = None
        if now >= self._executors_at:
            self._executors_at = now + EXECUTORS_EVERY_S
            running = self.job.executors()  # outside the lock: it asks Spark
        with self._ledger.lock:
            if running is not None:
                self._slots.executors(running, now)
            self._slots.check(now, stopping=self.stopping)

    def stop(self, timeout: float) -> bool | None:
        """Let the slots finish what they sent and end the job. Whether every slot
        finished what it sent; None when the job had to be cancelled."""
        with self._ledger.lock:
            self.stopping = True
        if self.id is not None and not self.job.join(timeout):
            log.warning("copy slots still running at shutdown; cancelling the copy job")
            self.job.cancel()
            self.job.join(10)
            return None  # a cancelled slot may have sends in flight: its tasks are waited out
        # Proven only in local mode (the slots ran on this host and none runs now) and
        # for a job that ended by our stop, not by an error that may have cut slots off.
        return self.id is None or (
            self.job.local and self.job.error is None and self.job.active_slots() == 0
        )

    def _maintain(self, now: float) -> None:
        if self.stopping:
            return
        if self.id is not None and not self.job.running():
            self._retire(now)
        if self._retired_until is not None:
            if not self._quiet(now):
                return
            self._retired_until = None
        if self.id is None and not self.spark_up:
            try:
                self.spark_up = self.job.ready()
            except SrmError as exc:
                self.fatal = str(exc)
            if not self.spark_up:
                return
        if self.id is None:
            ledger = self._ledger
            with ledger.lock:
                self.id = self.job.start()
                ledger.clear_slots()
                self._slots.started(range(self.job.slots))

    def _retire(self, now: float) -> None:
        """The job ended by itself: every partition is reconciled again once no slot of
        it can write any more."""
        ledger = self._ledger
        reason = self.job.error or "no reason given"
        self.job.cancel()  # the slots of its other Spark jobs end too
        with ledger.lock:
            old = self.id
            with ledger.fence_lock:
                # Every run of the job is over: a keep or a report that passed the job's
                # id check before this is answered 410, so no lease outlasts the wait-out.
                ledger.fenced_runs.update((slot, run.id) for slot, run in ledger.runs.items())
                last_lease = max(ledger.granted.values(), default=now)
            self._retired_until = last_lease + self._write_timeout_ms / 1000 + 1
            self.id = None
            for state in ledger.parts.values():
                if state.status == "running":
                    state.retry_later(now, f"the copy job ended: {reason}")
                state.innocent_plan = -1  # reconciled, as every partition of the job
                state.stopped = True
                if state.status == "releasing":
                    state.clean = False
        log.error("copy job %s ended (%s); restarting it", old, reason)

    def _quiet(self, now: float) -> bool:
        """No slot of the retired job can still write: none runs on this host (local
        mode), or the last lease given to one ran out and its writes timed out."""
        assert self._retired_until is not None
        if self.job.local and self.job.active_slots() == 0:
            return True
        return now >= self._retired_until
