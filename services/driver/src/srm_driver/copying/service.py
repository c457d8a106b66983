"""The driver's side of copying: which slot copies which partition from where, and the
copy job's life. The parts work on one :class:`Ledger` under its lock:

* the runtime thread calls :meth:`CopyService.tick`, which keeps the copy job running;
* each flow's thread (:class:`srm_driver.flow_worker.FlowWorker`) calls
  :meth:`CopyService.set_owned` with the partitions of that flow the task source gives
  this driver (once their remote topics exist), and :meth:`CopyService.work`, which lets
  the :class:`Planner` reconcile and plan what is pending of that flow;
* HTTP threads call :meth:`CopyService.on_report` for each slot report, answered by the
  :class:`ReportDesk`.

Nothing is copied without a lease from the task source, held per flow (a flow without one
waits while the others go on), and no partition is reconciled while a plan of it may
still be sending.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping

from srm_common.config.model import FlowConfig
from srm_common.errors import SrmError

from srm_driver.copying.clients import UnitSettings, sized_for_records, sized_for_round_trip
from srm_driver.copying.ledger import Ledger
from srm_driver.copying.meter import PartitionMetrics
from srm_driver.copying.planner import Planner
from srm_driver.copying.ports import LEASE_CAP_MS, CopyEvent, CopyJob, FlowAdapters
from srm_driver.copying.protocol import ProtocolError, parse_keep, parse_report
from srm_driver.copying.reports import ReportDesk
from srm_driver.copying.slots import START_GRACE_S, Slots
from srm_driver.copying.state import PartitionState, ResumeRequest

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
ADAPTER_RETRY_S = 5.0
# How often the driver asks Spark whether executors were added (a slot per new core).
GROW_EVERY_S = 2.0
# How often the driver asks Spark which executors it has (a slot whose executor Spark
# removed is lost at once, copying/slots.py).
EXECUTORS_EVERY_S = 1.0
# The longest lease slots on a cluster are given at a time (they report every 200 ms).
# A slot whose executor is lost is fenced until its last lease and the writes handed over
# before it have run out (copying/runs.py): on a cluster, where executors come and go,
# that wait is what a lost slot's partitions pause for, so it is kept short. A driver
# that does not answer for longer stops the slots' writing until it answers again (they
# resume through the restart's verification). In local mode the slots live and die with
# the driver's machine: they keep the whole LEASE_CAP_MS, riding out a starved driver.
CLUSTER_SLOT_LEASE_MS = 10_000


class CopyService:
    """See the module docstring."""

    def __init__(
        self,
        *,
        adapters: Callable[[FlowConfig], FlowAdapters],
        flows: Mapping[str, FlowConfig],
        job: CopyJob,
        lease_ms: Callable[[str], int],
        publish: Callable[[CopyEvent], None],
        write_timeout_ms: int,
        clock: Callable[[], float] = time.monotonic,
        slot_grace_s: float = START_GRACE_S,
    ) -> None:
        """``slot_grace_s``: how long after the first slot reported partitions placed on
        slots still to come wait for them (copying/slots.py)."""
        self._make_adapters = adapters
        self._job = job
        self._write_timeout_ms = write_timeout_ms
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
        self._adapters: dict[str, FlowAdapters] = {}
        # Per flow: the record size and round trip its settings carry, and the settings
        # they were sized from (the configuration's).
        self._sized: dict[str, tuple[int, int]] = {}
        self._base_settings: dict[str, UnitSettings] = {}
        self._adapter_errors: dict[str, tuple[float, str]] = {}
        self._stopping = False
        self._finished = False
        # Spark is up (it starts beside the flows: srm_driver.spark.SparkStart), or why it
        # could not start.
        self._spark_up = False
        self._fatal: str | None = None
        self._job_id: str | None = None
        self._retired_until: float | None = None
        self._grow_at = 0.0
        self._executors_at = 0.0
        self._slots = Slots(self._ledger, slot_grace_s)
        self._planner = Planner(self._ledger, self._flow_adapters, lease_ms, clock, self._slots)
        cap = LEASE_CAP_MS if job.local else CLUSTER_SLOT_LEASE_MS
        self._desk = ReportDesk(
            self._ledger,
            self._adapters,
            lambda flow: min(lease_ms(flow), cap),
            lambda: self._stopping,
        )

    # -- the runtime thread -------------------------------------------------------------

    def accepting(self) -> bool:
        """Whether partitions can be handed over (:meth:`set_owned`): once Spark is up, so
        that they are placed on the slots it runs. Until then a flow's worker creates
        their remote topics and waits."""
        return self._spark_up

    def fatal(self) -> str | None:
        """Why this driver cannot copy at all (Spark could not start), else None."""
        return self._fatal

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
                slot = self._slots.place(now, self._job.slots)
                ledger.parts.add(PartitionState(flow, key, owned[key], slot))
        if released:
            log.info("%s: released %d partitions that were not copying", flow, released)

    def size_clients(self, flow: str, largest_record: int, round_trip_ms: float | None) -> None:
        """Size ``flow``'s copy clients for record batches of ``largest_record`` bytes (the
        largest ``max.message.bytes`` of its source topics) and for the round trip to its
        source (rounded up to a power of two, so jitter changes nothing); the slots get
        the new settings with their next answer. Costs nothing while neither changed."""
        rtt = 1 << max(0, math.ceil(round_trip_ms) - 1).bit_length() if round_trip_ms else 0
        with self._ledger.lock:
            adapters = self._adapters.get(flow)
            if adapters is None or self._sized.get(flow) == (largest_record, rtt):
                return
            self._sized[flow] = (largest_record, rtt)
            base = self._base_settings.setdefault(flow, adapters.settings)
            sized = sized_for_round_trip(sized_for_records(base, largest_record), rtt)
            if sized == adapters.settings:
                return
            adapters.settings = sized
        log.info(
            "%s: copy clients sized for records of up to %d bytes and a %d ms round trip:"
            " max.request.size %s, max.partition.fetch.bytes %s, fetch.max.bytes %s",
            flow,
            largest_record,
            rtt,
            sized.producer.get("max.request.size"),
            sized.consumer.get("max.partition.fetch.bytes"),
            sized.consumer.get("fetch.max.bytes"),
        )

    def tick(self) -> None:
        """Keep the copy job running, with a slot for every core Spark has, and the
        partitions spread over the slots that report (the runtime thread)."""
        now = self._clock()
        self._maintain_job(now)
        if self._job_id is None or self._stopping:
            return
        if now >= self._grow_at:
            self._grow_at = now + GROW_EVERY_S
            added = self._job.grow()  # outside the lock: it asks Spark
            if added:
                with self._ledger.lock:
                    self._slots.added(added)
        running = None
        if now >= self._executors_at:
            self._executors_at = now + EXECUTORS_EVERY_S
            running = self._job.executors()  # outside the lock: it asks Spark
        with self._ledger.lock:
            if running is not None:
                self._slots.executors(running, now)
            self._slots.check(now, stopping=self._stopping)

    def prepare(self, flow: str) -> None:
        """Build ``flow``'s adapters now (its internal topics are created then), before
        its remote topics: thousands of new partitions keep a controller busy for a
        while, and the progress topic must not wait behind them. A failure is tried
        again later (the planner says why)."""
        try:
            self._flow_adapters(flow)
        except SrmError:
            pass

    def work(self, flow: str) -> None:
        """Reconcile and plan ``flow``'s pending partitions that are due, and check the
        topics of its running ones (the flow's own thread: a cluster that does not
        answer holds up only the flows that use it)."""
        now = self._clock()
        if self._job_id is None or self._stopping:
            return
        self._planner.plan_due(now, flow)
        self._planner.check_identities(now, flow)
        self._planner.check_codecs(now, flow)

    def held(self, flow: str) -> frozenset[TopicPartition]:
        """Partitions of ``flow`` this driver still holds (a plan may run): not halted.
        None once the copy job ended cleanly at shutdown: every slot finished what it
        sent, so the driver's goodbye lets its tasks move without a wait-out."""
        with self._ledger.lock:
            if self._finished:
                return frozenset()
            return frozenset(s.key for s in self._ledger.of_flow(flow) if s.status != "halted")

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
        with self._ledger.lock:
            self._stopping = True
        if self._job_id is not None and not self._job.join(timeout):
            log.warning("copy slots still running at shutdown; cancelling the copy job")
            self._job.cancel()
            self._job.join(10)
            return  # a cancelled slot may have sends in flight: its tasks are waited out
        # Proven only in local mode (the slots ran on this host and none runs now) and
        # for a job that ended by our stop, not by an error that may have cut slots off.
        done = self._job_id is None or (
            self._job.local and self._job.error is None and self._job.active_slots() == 0
        )
        with self._ledger.lock:
            self._finished = done

    def metrics(self, flow: str, now_ms: int) -> list[PartitionMetrics]:
        """What each partition of ``flow`` did since the last call, for a raw sample."""
        with self._ledger.lock:
            return self._ledger.metrics(flow, now_ms)

    def status(self, flow: str) -> dict[str, object]:
        """The flow's copying on this driver, for the per-flow REST status."""
        with self._ledger.lock:
            return self._ledger.status(flow, self._job_id)

    # -- slot reports (HTTP threads) ---------------------------------------------------

    def on_report(
        self, job: str, slot: int, body: Mapping[str, object]
    ) -> tuple[int, dict[str, object]]:
        """Handle a slot report; the HTTP status and the answer (410 for an old job)."""
        if job != self._job_id:
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
        if job != self._job_id:
            return 410, {"error": f"copy job {job} is over"}
        try:
            run = parse_keep(body)
        except ProtocolError as exc:
            log.error("copy slot %d: %s", slot, exc)
            return 400, {"error": str(exc)}
        return self._desk.keep(slot, run, self._clock())

    # -- adapters and the job ---------------------------------------------------------

    def _flow_adapters(self, flow: str) -> FlowAdapters:
        with self._ledger.lock:
            adapters = self._adapters.get(flow)
        if adapters is not None:
            return adapters
        failed = self._adapter_errors.get(flow)
        if failed is not None and self._clock() < failed[0]:
            raise SrmError(failed[1])
        try:
            adapters = self._make_adapters(self._ledger.flows[flow])
        except SrmError as exc:
            self._adapter_errors[flow] = (self._clock() + ADAPTER_RETRY_S, str(exc))
            raise
        with self._ledger.lock:
            self._adapters[flow] = adapters
        return adapters

    def _maintain_job(self, now: float) -> None:
        if self._stopping:
            return
        if self._job_id is not None and not self._job.running():
            self._retire(now)
        if self._retired_until is not None:
            if not self._quiet(now):
                return
            self._retired_until = None
        if self._job_id is None and not self._spark_up:
            try:
                self._spark_up = self._job.ready()
            except SrmError as exc:
                self._fatal = str(exc)
            if not self._spark_up:
                return
        if self._job_id is None:
            with self._ledger.lock:
                self._job_id = self._job.start()
                self._ledger.epochs.clear()
                self._ledger.granted.clear()
                self._ledger.last_seq.clear()
                self._ledger.runs.clear()
                self._ledger.live_slots.clear()
                self._ledger.first_seen.clear()
                self._ledger.fenced_runs.clear()
                self._slots.started(range(self._job.slots))

    def _retire(self, now: float) -> None:
        """The job ended by itself: every partition is reconciled again once no slot of
        it can write any more."""
        ledger = self._ledger
        reason = self._job.error or "no reason given"
        self._job.cancel()  # the slots of its other Spark jobs end too
        with ledger.lock:
            old = self._job_id
            last_lease = max(ledger.granted.values(), default=now)
            self._retired_until = last_lease + self._write_timeout_ms / 1000 + 1
            self._job_id = None
            for state in ledger.parts.values():
                if state.status == "running":
                    state.retry_later(now, f"the copy job ended: {reason}")
                state.stopped = True
                if state.status == "releasing":
                    state.clean = False
        log.error("copy job %s ended (%s); restarting it", old, reason)

    def _quiet(self, now: float) -> bool:
        """No slot of the retired job can still write: none runs on this host (local
        mode), or the last lease given to one ran out and its writes timed out."""
        assert self._retired_until is not None
        if self._job.local and self._job.active_slots() == 0:
            return True
        return now >= self._retired_until
