"""The driver's side of copying: which slot copies which partition from where, and the
copy job's life. The parts work on one :class:`Ledger` under its lock:

* the runtime thread calls :meth:`CopyService.tick`, which keeps the copy job running
  (:class:`JobKeeper`);
* each flow's threads (:class:`srm_driver.flow_worker.FlowWorker`) call
  :meth:`CopyService.set_owned` with the partitions of that flow the task source gives
  this driver (once their remote topics exist; its topics thread), and
  :meth:`CopyService.work` (its planning thread), which lets
  the :class:`Planner` reconcile and plan what is pending of that flow and the
  :class:`RunningChecks` look at its running partitions;
* HTTP threads call :meth:`CopyService.on_report` for each slot report, answered by the
  :class:`ReportDesk`.

Nothing is copied without a lease from the task source, held per flow (a flow without one
waits while the others go on), and no partition is reconciled while a plan of it may
still be sending.

Each flow's adapters are built once and kept (:class:`FlowAdapterCache`, which also sizes
the flow's copy clients).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from srm_common.config.model import FlowConfig
from srm_common.errors import SrmError

from srm_driver.copying.flow_adapters import FlowAdapterCache
from srm_driver.copying.job_keeper import JobKeeper
from srm_driver.copying.ledger import Ledger
from srm_driver.copying.meter import PartitionMetrics
from srm_driver.copying.planner import Planner
from srm_driver.copying.ports import LEASE_CAP_MS, CopyEvent, CopyJob, FlowAdapters
from srm_driver.copying.protocol import ProtocolError, parse_keep, parse_report
from srm_driver.copying.reports import ReportDesk
from srm_driver.copying.running_checks import RunningChecks, TopicCodecs
from srm_driver.copying.slots import START_GRACE_S, Slots
from srm_driver.copying.state import PartitionState, ResumeRequest

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# The longest lease slots on a cluster are given at a time (they report every 200 ms).
# A slot whose executor is lost is fenced until its last lease and the writes handed over
# before it have run out (copying/runs.py): on a cluster, where executors come and go,
# that wait is what a lost slot's partitions pause for, so it is kept short. A driver
# that does not answer for longer stops the slots' writing until it answers again (they
# resume through the restart's verification). In local mode the slots live and die with
# the driver's machine: they keep the whole LEASE_CAP_MS, riding out a starved driver.
CLUSTER_SLOT_LEASE_MS = 10_000
# Partitions drained for a raw sample under one hold of the ledger's lock (metrics).
METRICS_SLICE = 1000


class CopyService:
    """See the module docstring."""

    def __init__(
        self,
        *,
        adapters: Callable[[FlowConfig], FlowAdapters],
        flows: Mapping[str, FlowConfig],
        job: CopyJob,
        lease_ms: Callable[[str], int],
        lease_held_since: Callable[[str], float | None],
        publish: Callable[[CopyEvent], None],
        write_timeout_ms: int,
        clock: Callable[[], float] = time.monotonic,
        slot_grace_s: float = START_GRACE_S,
    ) -> None:
        """``slot_grace_s``: how long after the first slot reported partitions placed on
        slots still to come wait for them (copying/slots.py)."""
        self._clock = clock
        # A send in flight when its unit broke lands within the producer's request
        # timeout (half the write timeout) if at all: wait that out before reconciling.
        # A slot's record handed over before its lease ended lands within max.block (1 s)
        # and the write timeout, if at all (docs/design.md section 1; copying/runs.py).
        self._ledger = Ledger(
            flows,
            publish,
            settle_s=write_timeout_ms / 2000 + 1,
            wait_out_s=write_timeout_ms / 1000 + 2,
        )
        self._adapters = FlowAdapterCache(adapters, flows, self._ledger.lock, clock)
        self._finished = False
        self._slots = Slots(self._ledger, slot_grace_s)
        self._keeper = JobKeeper(job, self._ledger, self._slots, write_timeout_ms)
        codecs = TopicCodecs()
        leases = (lease_ms, lease_held_since)
        self._planner = Planner(
            self._ledger, self._adapters.get, leases, clock, self._slots, codecs
        )
        self._checks = RunningChecks(self._ledger, self._adapters.get, lease_ms, codecs)
        cap = LEASE_CAP_MS if job.local else CLUSTER_SLOT_LEASE_MS
        self._desk = ReportDesk(
            self._ledger,
            self._adapters.built,
            lambda flow: min(lease_ms(flow), cap),
            lambda: self._keeper.stopping,
        )

    # -- the runtime thread -------------------------------------------------------------

    def accepting(self) -> bool:
        """Whether partitions can be handed over (:meth:`set_owned`): once Spark is up, so
        that they are placed on the slots it runs. Until then a flow's worker creates
        their remote topics and waits."""
        return self._keeper.spark_up

    def fatal(self) -> str | None:
        """Why this driver cannot copy at all (Spark could not start), else None."""
        return self._keeper.fatal

    def set_owned(self, flow: str, owned: Mapping[TopicPartition, str]) -> None:
        """Copy exactly these upstream partitions of ``flow`` (to these remote topics).
        Costs what changed: partitions added or released, not the ones kept."""
        ledger = self._ledger
        released = 0
        with ledger.lock:
            held = ledger.parts.keys_of_flow(flow)
            for key in held - owned.keys():
                state = ledger.parts.get(flow, key)
                assert state is not None
                if (
                    state.status == "running"
                    or not state.stopped
                    or self._clock() < state.fenced_until
                ):
                    state.status = "releasing"
                else:
                    ledger.parts.remove(state)
                    released += 1
            now = self._clock()
            for key in owned.keys() - held:
                slot = self._slots.place(now, self._keeper.job.slots)
                ledger.parts.add(PartitionState(flow, key, owned[key], slot))
        if released:
            log.info("%s: released %d partitions that were not copying", flow, released)

    def size_clients(self, flow: str, largest_record: int, round_trip_ms: float | None) -> None:
        """Size ``flow``'s copy clients for record batches of ``largest_record`` bytes (the
        largest ``max.message.bytes`` of its source topics) and for the round trip to its
        source (rounded up to a power of two, so jitter changes nothing); the slots get
        the new settings with their next answer. Costs nothing while neither changed."""
        self._adapters.size(flow, largest_record, round_trip_ms)

    def tick(self) -> None:
        """Keep the copy job running, with a slot for every core Spark has, and the
        partitions spread over the slots that report (the runtime thread)."""
        self._keeper.tick(self._clock())

    def prepare(self, flow: str) -> None:
        """Build ``flow``'s adapters now (its internal topics are created then), before
        its remote topics: thousands of new partitions keep a controller busy for a
        while, and the progress topic must not wait behind them. A failure is tried
        again later (the planner says why)."""
        try:
            self._adapters.get(flow)
        except SrmError:
            pass

    def work(self, flow: str) -> None:
        """Reconcile and plan ``flow``'s pending partitions that are due, and check the
        topics of its running ones (the flow's own thread: a cluster that does not
        answer holds up only the flows that use it)."""
        now = self._clock()
        if self._keeper.id is None or self._keeper.stopping:
            return
        self._planner.plan_due(now, flow)
        self._checks.check_identities(now, flow)
        self._checks.check_codecs(now, flow)

    def held(self, flow: str) -> frozenset[TopicPartition]:
        """Partitions of ``flow`` this driver still holds (a plan may run): not halted; the
        same object while that set is the same. None once the copy job ended cleanly at
        shutdown: every slot finished what it sent, so the driver's goodbye lets its
        tasks move without a wait-out."""
        with self._ledger.lock:
            if self._finished:
                return frozenset()
            return self._ledger.parts.held(flow)

    def request_resume(self, flow: str, key: TopicPartition, request: ResumeRequest) -> bool:
        """Resume a halted partition as the operator chose; False if it is not halted here."""
        with self._ledger.lock:
            state = self._ledger.parts.get(flow, key)
            if state is None or state.status != "halted":
                return False
            if state.progress is not None and state.progress.resume_id == request.request_id:
                return True  # applied already (the event was replayed)
            state.resume = request
            state.status = "pending"
            state.retry_at = 0.0
            state.tries.clear()
            log.info(
                "%s: %s asks to resume %s-%d from %s",
                flow,
                request.by,
                *key,
                request.point.describe(),
            )
            return True

    def stop(self, timeout: float = 90.0) -> None:
        """Let the slots finish what they sent, record it, end the job."""
        done = self._keeper.stop(timeout)
        if done is None:
            return  # cancelled: a slot may have sends in flight, its tasks are waited out
        with self._ledger.lock:
            self._finished = done

    def metrics(self, flow: str, now_ms: int) -> list[PartitionMetrics]:
        """What each partition of ``flow`` did since the last call, for a raw sample.

        Drained :data:`METRICS_SLICE` partitions at a time, the ledger's lock let go in
        between: at 30,000 partitions on a loaded host one drain held it 1-2 s every
        interval, and a slot asking for its leases alone waited behind it until they ran
        out (copying/reports.py, ``keep``)."""
        ledger = self._ledger
        with ledger.lock:
            held = {state.key: state for state in ledger.of_flow(flow)}
            keys = ledger.meter.due(flow, held)
        out: list[PartitionMetrics] = []
        for start in range(0, len(keys), METRICS_SLICE):
            with ledger.lock:
                out += ledger.meter.drain_keys(
                    flow, keys[start : start + METRICS_SLICE], held, now_ms
                )
        return out

    def status(self, flow: str) -> dict[str, object]:
        """The flow's copying on this driver, for the per-flow REST status."""
        with self._ledger.lock:
            return self._ledger.status(flow, self._keeper.id)

    # -- slot reports (HTTP threads) ---------------------------------------------------

    def on_report(
        self, job: str, slot: int, body: Mapping[str, object]
    ) -> tuple[int, dict[str, object]]:
        """Handle a slot report; the HTTP status and the answer (410 for an old job)."""
        if job != self._keeper.id:
            return 410, {"error": f"copy job {job} is over"}
        try:
            report = parse_report(body)
        except ProtocolError as exc:
            log.error("copy slot %d: %s", slot, exc)
            return 400, {"error": str(exc)}
        return self._desk.handle(report, self._clock())

    def on_keep(
        self, job: str, slot: int, body: Mapping[str, object]
    ) -> tuple[int, dict[str, object]]:
        """A slot keeping its leases while the answer to its report is late; the HTTP
        status and the answer (:meth:`ReportDesk.keep`)."""
        if job != self._keeper.id:
            return 410, {"error": f"copy job {job} is over"}
        try:
            run = parse_keep(body)
        except ProtocolError as exc:
            log.error("copy slot %d: %s", slot, exc)
            return 400, {"error": str(exc)}
        return self._desk.keep(slot, run, self._clock())
