"""The driver's side of copying: which slot copies which partition from where, the
progress and offset syncs of what the slots report, halts, and the copy job's life.

Two threads meet here, under one lock:

* the runtime thread calls :meth:`CopyService.set_owned` with the partitions the task
  source gives this driver and :meth:`CopyService.tick`, which reconciles pending
  partitions (Kafka reads, the pure decision of :mod:`srm_common.domain.progress`) and
  hands out plans, and restarts the copy job if it died;
* HTTP threads call :meth:`CopyService.on_report` for each slot report: acknowledged
  positions and offset syncs in, syncs then progress written (with the next
  reservation), the slot's desired state and lease out.

Nothing is copied without a valid lease (:class:`LeaseSource`), and no partition is
reconciled while a plan of it may still be sending.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from srm_common.config.model import FlowConfig
from srm_common.domain.progress import (
    Halt,
    PartitionFacts,
    Progress,
    Resume,
    Verify,
    offset_syncs,
    reconcile,
    reconcile_shared,
    resume_from,
)
from srm_common.domain.records import OffsetSync
from srm_common.errors import SrmError

from srm_driver.copying.clients import UnitSettings
from srm_driver.copying.facts import FlowFacts
from srm_driver.copying.protocol import (
    Failure,
    PartitionPlan,
    PartitionReport,
    ProtocolError,
    SlotReport,
    UnitReport,
    parse_report,
)
from srm_driver.copying.state import Counters, PartitionState, ResumeRequest

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
REPORT_MS = 200
STANDALONE_LEASE_MS = 30_000
# How often the topics of running partitions are checked for deletion or recreation (by
# topic id); the copy loops' clients do not tell.
IDENTITY_CHECK_S = 2.0


class ProgressWriter(Protocol):
    def write(self, updates: Iterable[tuple[TopicPartition, Progress]]) -> None: ...

    def load(self) -> dict[TopicPartition, Progress]: ...


class SyncWriter(Protocol):
    def write(self, records: Iterable[tuple[bytes, bytes]]) -> int: ...


@dataclass
class FlowAdapters:
    """The clients one flow's copying needs, built once by the composition root."""

    flow: FlowConfig
    store: ProgressWriter
    syncs: SyncWriter
    facts: FlowFacts
    settings: UnitSettings
    shared: bool


class CopyJob(Protocol):
    slots: int
    job_id: str | None
    error: str | None
    local: bool

    def start(self) -> str: ...

    def running(self) -> bool: ...

    def cancel(self) -> None: ...

    def join(self, timeout: float) -> bool: ...

    def active_slots(self) -> int | None: ...


@dataclass(frozen=True)
class CopyEvent:
    """Something an operator must hear about: ``kind`` ``halted`` (``detail`` is the halt
    kind, ``text`` the reason) or ``lost`` (retention deleted ``[first, end)``)."""

    kind: str
    flow: str
    topic: str
    partition: int
    detail: str = ""
    text: str = ""
    first: int = -1
    end: int = -1


class CopyService:
    """See the module docstring."""

    def __init__(
        self,
        *,
        adapters: Callable[[FlowConfig], FlowAdapters],
        flows: Mapping[str, FlowConfig],
        job: CopyJob,
        lease_ms: Callable[[], int],
        publish: Callable[[CopyEvent], None],
        write_timeout_ms: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._make_adapters = adapters
        self._flows = dict(flows)
        self._job = job
        self._lease_ms = lease_ms
        self._publish = publish
        self._write_timeout_ms = write_timeout_ms
        self._clock = clock
        self._lock = threading.RLock()
        self._adapters: dict[str, FlowAdapters] = {}
        self._adapter_errors: dict[str, tuple[float, str]] = {}
        self._parts: dict[tuple[str, TopicPartition], PartitionState] = {}
        self._epochs: dict[tuple[int, str], int] = {}
        self._next_plan = 1
        self._stopping = False
        self._job_id: str | None = None
        self._retired: tuple[str, float] | None = None
        self._granted: dict[int, float] = {}
        self._unit_errors: dict[str, str] = {}
        self._resumes: dict[tuple[str, TopicPartition], ResumeRequest] = {}
        self._identity_due: dict[str, float] = {}

    # -- the runtime thread -------------------------------------------------------------

    def set_owned(self, flow: str, owned: Mapping[TopicPartition, str]) -> None:
        """Copy exactly these upstream partitions of ``flow`` (to these remote topics)."""
        with self._lock:
            for (name, key), state in list(self._parts.items()):
                if name != flow or key in owned:
                    continue
                if state.status == "running" or not state.stopped:
                    state.status = "releasing"
                else:
                    del self._parts[(name, key)]
                    log.info("%s: released %s-%d", flow, *key)
            for key, remote in owned.items():
                if (flow, key) not in self._parts:
                    slot = self._least_loaded_slot()
                    self._parts[(flow, key)] = PartitionState(flow, key, remote, slot)

    def tick(self) -> None:
        """Keep the job running, reconcile what is due, give out plans."""
        now = self._clock()
        self._maintain_job(now)
        if self._job_id is None or self._stopping or self._lease_ms() <= 0:
            return
        due: dict[str, list[PartitionState]] = {}
        with self._lock:
            for (flow, key), state in list(self._parts.items()):
                if state.status == "releasing" and state.stopped and not state.clean:
                    del self._parts[(flow, key)]
                    continue
                if state.status == "pending" and state.stopped and now >= state.retry_at:
                    due.setdefault(flow, []).append(state)
        for flow, states in due.items():
            self._reconcile_flow(flow, states)
        self._check_identities(now)

    def held(self, flow: str) -> frozenset[TopicPartition]:
        """Partitions of ``flow`` this driver still holds (a plan may run): not halted."""
        with self._lock:
            return frozenset(
                key
                for (name, key), state in self._parts.items()
                if name == flow and state.status != "halted"
            )

    def request_resume(self, flow: str, key: TopicPartition, request: ResumeRequest) -> bool:
        """Resume a halted partition as the operator chose; False if it is not halted here."""
        with self._lock:
            state = self._parts.get((flow, key))
            if state is None or state.status != "halted":
                return False
            if state.progress is not None and state.progress.resume_id == request.request_id:
                return True  # applied already (the event was replayed)
            state.resume = request
            state.status = "pending"
            state.retry_at = 0.0
            state.tries.clear()
            log.info("%s: %s asks to resume %s-%d from %s", flow, request.by, *key, request.mode)
            return True

    def stop(self, timeout: float = 90.0) -> None:
        """Let the slots finish what they sent, record it, end the job."""
        with self._lock:
            self._stopping = True
        if self._job_id is None:
            return
        if not self._job.join(timeout):
            log.warning("copy slots still running at shutdown; cancelling the copy job")
            self._job.cancel()
            self._job.join(10)

    # -- status ---------------------------------------------------------------------

    def status(self, flow: str) -> dict[str, object]:
        """The flow's copying on this driver, for the per-flow REST status."""
        with self._lock:
            states = [s for (name, _k), s in self._parts.items() if name == flow]
            totals = Counters()
            for state in states:
                totals.add(state.totals)
            by_status: dict[str, int] = {}
            for state in states:
                by_status[state.status] = by_status.get(state.status, 0) + 1
            errors = [
                f"{s.key[0]}-{s.key[1]}: {s.error}"
                for s in states
                if s.error and s.status != "halted"
            ]
            unit_error = self._unit_errors.get(flow)
            return {
                "partitions": len(states),
                "by_status": by_status,
                "records": totals.records,
                "bytes": totals.bytes,
                "dropped": totals.dropped,
                "latency_avg_ms": totals.latency_sum_ms // max(totals.records, 1),
                "latency_max_ms": totals.latency_max_ms,
                "lost_to_retention": sum(s.lost for s in states),
                "halted": [
                    {
                        "topic": s.key[0],
                        "partition": s.key[1],
                        "kind": s.halt.kind if s.halt else None,
                        "reason": s.halt.reason if s.halt else None,
                        "since_ms": int((s.halted_at or 0) * 1000),
                    }
                    for s in sorted(states, key=lambda s: s.key)
                    if s.status == "halted"
                ],
                "errors": ([unit_error] if unit_error else []) + errors[:10],
                "job": self._job_id,
            }

    def partition_since(self, flow: str) -> dict[TopicPartition, float]:
        with self._lock:
            return {key: s.since for (name, key), s in self._parts.items() if name == flow}

    # -- slot reports (HTTP threads) ---------------------------------------------------

    def on_report(
        self, job: str, slot: int, body: Mapping[str, object]
    ) -> tuple[int, dict[str, object]]:
        """Handle a slot report; the HTTP status and the answer."""
        if job != self._job_id:
            return 410, {"error": f"copy job {job} is over"}
        try:
            report = parse_report(body)
        except ProtocolError as exc:
            log.error("copy slot %d: %s", slot, exc)
            return 400, {"error": str(exc)}
        lease = max(0, min(self._lease_ms(), STANDALONE_LEASE_MS))
        now = self._clock()
        with self._lock:
            syncs, progress = self._take_report(report, now, writing=lease > 0)
        try:
            self._write(syncs, progress)
        except SrmError as exc:
            log.error("copy slot %d: cannot record progress: %s", slot, exc)
            with self._lock:
                for flow, _updates in progress.items():
                    self._unit_errors[flow] = f"cannot record progress: {exc}"
            return 503, {"error": f"cannot record progress: {exc}"}
        with self._lock:
            self._progress_written(progress, now)
            if lease > 0:
                self._granted[slot] = now + lease / 1000
            return 200, self._answer(slot, lease)

    def _take_report(
        self, report: SlotReport, now: float, *, writing: bool
    ) -> tuple[
        dict[str, list[tuple[bytes, bytes]]], dict[str, list[tuple[TopicPartition, Progress]]]
    ]:
        syncs: dict[str, list[tuple[bytes, bytes]]] = {}
        progress: dict[str, list[tuple[TopicPartition, Progress]]] = {}
        for unit in report.units:
            adapters = self._adapters.get(unit.flow)
            if adapters is None:
                continue
            if unit.poll_error:
                self._unit_errors[unit.flow] = unit.poll_error
            else:
                self._unit_errors.pop(unit.flow, None)
            for part in unit.partitions:
                state = self._parts.get((unit.flow, part.key))
                if state is None or part.plan != state.last_plan:
                    continue
                counters = Counters.of(part)
                state.totals.add(counters.since(state.seen))
                state.seen = counters
                state.acked = (part.acked_up, part.acked_down)
                state.next_send = part.next_send
                for up, down in part.syncs:
                    sync = OffsetSync(part.topic, part.partition, up, down)
                    syncs.setdefault(unit.flow, []).append((sync.encode_key(), sync.encode_value()))
                if part.stopped:
                    self._plan_stopped(state, part.error, unit, now)
                elif writing and self._commit_due(state, part, now, adapters):
                    progress.setdefault(unit.flow, []).append(
                        (state.key, self._next_progress(state))
                    )
                if state.status == "releasing" and state.stopped:
                    if not state.clean or state.progress is None:
                        # The next holder reconciles (and verifies) from the last record.
                        del self._parts[(unit.flow, part.key)]
                    elif writing:
                        progress.setdefault(unit.flow, []).append(
                            (state.key, self._position(state).reserved(None))
                        )
            self._unit_broken(report.slot, unit, now)
        return syncs, progress

    def _plan_stopped(
        self, state: PartitionState, error: Failure | None, unit: UnitReport, now: float
    ) -> None:
        state.stopped = True
        state.clean = error is None and unit.broken is None
        if state.status in ("releasing", "halted"):
            return
        if error is not None:
            self._failed(state, error, now)
        elif self._stopping:
            state.status = "releasing"
        elif unit.broken is None and state.status == "running":
            state.retry_later(now, "the copy loop stopped")

    def _unit_broken(self, slot: int, unit: UnitReport, now: float) -> None:
        failure = unit.broken
        if unit.exited and failure is None and not self._stopping:
            failure = Failure("transient", "the copy loop of this flow ended unexpectedly")
        epoch = self._epochs.get((slot, unit.flow), 0)
        if failure is None or (unit.broken is not None and unit.broken_epoch != epoch):
            return
        self._epochs[(slot, unit.flow)] = epoch + 1
        blamed = failure.partition_key
        for (flow, key), state in self._parts.items():
            if flow != unit.flow or state.slot != slot or state.status != "running":
                continue
            if key == blamed:
                self._failed(state, failure, now)
            else:
                state.retry_later(now, None)
                state.backoff = 0.0  # innocent: only the settle delay of a broken unit
        if failure.kind != "lease":
            log.warning(
                "%s: copy slot %d stopped on %s: %s", unit.flow, slot, failure.kind, failure.message
            )

    def _failed(self, state: PartitionState, failure: Failure, now: float) -> None:
        """A plan of ``state`` ended on ``failure``: count a poison record's tries, or retry."""
        cause = (failure.error_class or "").rpartition(".")[2]
        message = f"{failure.kind}: {cause + ': ' if cause else ''}{failure.message}"
        if failure.kind == "poison" and failure.offset >= 0:
            tries = state.tries.get(failure.offset, 0) + 1
            state.tries[failure.offset] = tries
            max_tries = self._flows[state.flow].poison_max_tries
            if tries >= max_tries:
                self._halt(
                    state,
                    Halt(
                        "poison",
                        f"{state.where}: the record at source offset {failure.offset} could not"
                        f" be written after {tries} tries: {failure.error_class or 'error'}:"
                        f" {failure.message.rstrip('.')}. Fix the target (e.g. the remote topic's"
                        " max.message.bytes) and resume with srm-control --from copy-end, or"
                        f" skip the record with --from offset --offset {failure.offset + 1}",
                    ),
                )
                return
            message += f" (try {tries} of {max_tries})"
        state.retry_later(now, message)

    def _halt(self, state: PartitionState, halt: Halt) -> None:
        state.halted(halt)
        state.resume = None
        log.error("%s", halt.reason)
        self._publish(
            CopyEvent("halted", state.flow, state.key[0], state.key[1], halt.kind, halt.reason)
        )

    def _commit_due(
        self, state: PartitionState, part: PartitionReport, now: float, adapters: FlowAdapters
    ) -> bool:
        """Time to record progress: it moved and the interval passed, or the slot came
        within half a window of its reservation (or waits at it, maybe behind a gap)."""
        if state.status != "running" or state.progress is None:
            return False
        window = adapters.flow.batch_max_records
        if part.state == "waiting_reservation":
            return self._next_progress(state).inflight_end != state.progress.inflight_end
        if part.acked_up <= state.progress.next_upstream:
            return False
        interval = adapters.flow.commit_interval_ms / 1000
        return now - state.last_commit >= interval or state.reserve - part.acked_up < window // 2

    def _position(self, state: PartitionState) -> Progress:
        """The durable progress moved to what the slot acknowledged (acknowledgements are
        facts from the broker); the reservation stays the durable one."""
        assert state.progress is not None
        if state.acked is None or state.acked[0] <= state.progress.next_upstream:
            return state.progress
        up, down = state.acked
        return Progress(
            up,
            down,
            state.progress.inflight_end,
            state.progress.source_topic_id,
            state.progress.target_topic_id,
            state.progress.resume_id,
        )

    def _next_progress(self, state: PartitionState) -> Progress:
        """Progress at the acknowledged position, reserving a window past the next record
        to send (which a gap may put far past the position)."""
        position = self._position(state)
        window = self._flows[state.flow].batch_max_records
        ahead = max(position.next_upstream, state.next_send)
        return position.reserved(max(ahead + window, position.inflight_end or 0))

    def _write(
        self,
        syncs: Mapping[str, list[tuple[bytes, bytes]]],
        progress: Mapping[str, list[tuple[TopicPartition, Progress]]],
    ) -> None:
        # Syncs first: progress must never cover a copy whose sync is not written.
        for flow, records in syncs.items():
            if records:
                self._adapters[flow].syncs.write(records)
        for flow, updates in progress.items():
            if updates:
                self._adapters[flow].store.write(updates)

    def _progress_written(
        self, progress: Mapping[str, list[tuple[TopicPartition, Progress]]], now: float
    ) -> None:
        for flow, updates in progress.items():
            self._unit_errors.pop(flow, None)
            for key, written in updates:
                state = self._parts.get((flow, key))
                if state is None:
                    continue
                state.progress = written
                state.last_commit = now
                if state.status == "running" and written.inflight_end is not None:
                    state.reserve = max(state.reserve, written.inflight_end)
                    if state.plan is not None:
                        state.plan = _with_reserve(state.plan, state.reserve)
                elif state.status == "releasing" and written.inflight_end is None:
                    del self._parts[(flow, key)]
                    log.info("%s: released %s-%d at offset %d", flow, *key, written.next_upstream)

    def _answer(self, slot: int, lease: int) -> dict[str, object]:
        units: dict[str, object] = {}
        for flow, adapters in self._adapters.items():
            mine = [s for (name, _k), s in self._parts.items() if name == flow and s.slot == slot]
            if not mine:
                continue
            units[flow] = {
                "epoch": self._epochs.get((slot, flow), 0),
                "settings": adapters.settings.to_json(),
                "partitions": [
                    s.plan.to_json() for s in mine if s.status == "running" and s.plan is not None
                ],
            }
        return {"lease_ms": lease, "report_ms": REPORT_MS, "stop": self._stopping, "units": units}

    # -- reconciling (runtime thread) ---------------------------------------------------

    def _reconcile_flow(self, flow: str, states: list[PartitionState]) -> None:
        now = self._clock()
        try:
            adapters = self._flow_adapters(flow)
            routes = {s.key: s.remote for s in states}
            facts = adapters.facts.gather(routes)
            recorded = adapters.store.load() if any(s.progress is None for s in states) else {}
        except SrmError as exc:
            with self._lock:
                for state in states:
                    state.retry_later(now, str(exc))
            log.warning("%s: cannot reconcile %d partitions yet: %s", flow, len(states), exc)
            return
        for state in states:
            try:
                self._reconcile(adapters, state, facts[state.key], recorded.get(state.key))
            except SrmError as exc:
                with self._lock:
                    state.retry_later(self._clock(), str(exc))
                log.warning("%s: %s (retrying in %.0f s)", state.where, exc, state.backoff)

    def _reconcile(
        self,
        adapters: FlowAdapters,
        state: PartitionState,
        facts: PartitionFacts,
        loaded: Progress | None,
    ) -> None:
        with self._lock:
            if state.status != "pending":
                return
            if state.progress is None:
                state.progress = loaded
            progress = self._position(state) if state.progress is not None else None
            request = state.resume
        syncs: list[tuple[int, int]] = []
        if request is not None:
            decision: Resume | Halt | Verify = self._resumed(request, progress, facts)
        elif adapters.shared:
            last = None
            if progress is not None and facts.target_topic_id is not None:
                start = progress.next_downstream or 0
                last = adapters.facts.last_copied(state.key, state.remote, start)
            decision = reconcile_shared(progress, facts, where=state.where, last_copied=last)
        else:
            decision = reconcile(progress, facts, where=state.where)
            if isinstance(decision, Verify):
                surplus, pairs = adapters.facts.compare(
                    state.key, state.remote, decision.start, decision.downstream, decision.count
                )
                decision = reconcile(progress, facts, where=state.where, surplus=surplus)
                syncs = offset_syncs(pairs, shared=False)
        if isinstance(decision, Verify):  # cannot happen twice; a defect if it does
            raise SrmError(f"{state.where}: verification did not settle the position")
        if isinstance(decision, Halt):
            with self._lock:
                self._halt(state, decision)
            return
        self._start_plan(adapters, state, decision, facts, request, syncs)

    def _check_identities(self, now: float) -> None:
        """Stop running partitions whose source or remote topic was deleted or recreated:
        the reconcile that follows halts them with the reason."""
        running: dict[str, dict[TopicPartition, PartitionState]] = {}
        with self._lock:
            for (flow, key), state in self._parts.items():
                if state.status == "running" and state.progress is not None:
                    running.setdefault(flow, {})[key] = state
        for flow, states in running.items():
            if now < self._identity_due.get(flow, 0.0):
                continue
            self._identity_due[flow] = now + IDENTITY_CHECK_S
            try:
                found = self._adapters[flow].facts.identities(
                    {key: state.remote for key, state in states.items()}
                )
            except SrmError as exc:
                log.warning("%s: cannot check the topics of its partitions: %s", flow, exc)
                continue
            with self._lock:
                for key, state in states.items():
                    progress = state.progress
                    if state.status != "running" or progress is None or key not in found:
                        continue
                    source_id, target_id = found[key]
                    changed = (
                        source_id is None
                        or target_id is None
                        or source_id != (progress.source_topic_id or source_id)
                        or target_id != (progress.target_topic_id or target_id)
                    )
                    if changed:
                        log.error("%s: a topic was deleted or recreated; stopping it", state.where)
                        state.retry_later(now, "a topic was deleted or recreated")
                        state.backoff = 0.0

    def _resumed(
        self, request: ResumeRequest, progress: Progress | None, facts: PartitionFacts
    ) -> Resume | Halt:
        try:
            return resume_from(request.mode, progress, facts, offset=request.offset)  # type: ignore[arg-type]
        except ValueError as exc:
            return Halt("conflict", f"the resume asked by {request.by} cannot be applied: {exc}")

    def _start_plan(
        self,
        adapters: FlowAdapters,
        state: PartitionState,
        resume: Resume,
        facts: PartitionFacts,
        request: ResumeRequest | None,
        syncs: list[tuple[int, int]],
    ) -> None:
        window = adapters.flow.batch_max_records
        resume_id = (
            request.request_id
            if request
            else (state.progress.resume_id if state.progress else None)
        )
        progress = resume.progress(facts, resume_id).reserved(resume.start + window)
        records = []
        for up, down in syncs:
            sync = OffsetSync(state.key[0], state.key[1], up, down)
            records.append((sync.encode_key(), sync.encode_value()))
        if records:
            adapters.syncs.write(records)
        adapters.store.write([(state.key, progress)])
        if resume.lost:
            self._publish(
                CopyEvent(
                    "lost",
                    state.flow,
                    state.key[0],
                    state.key[1],
                    first=resume.start - resume.lost,
                    end=resume.start,
                    text=f"retention deleted {resume.lost} source offsets before they were copied",
                )
            )
            log.warning(
                "%s: retention deleted %d source offsets (%d..%d) before they were copied",
                state.where,
                resume.lost,
                resume.start - resume.lost,
                resume.start - 1,
            )
        if resume.verified:
            log.info(
                "%s: %d records past the recorded position are verified copies; continuing"
                " after them",
                state.where,
                resume.verified,
            )
        with self._lock:
            if state.status != "pending":
                return
            plan = PartitionPlan(
                state.key[0],
                state.key[1],
                self._next_plan,
                state.remote,
                resume.start,
                resume.downstream,
                progress.inflight_end or resume.start,
            )
            self._next_plan += 1
            state.lost += resume.lost
            state.resume = None
            state.running(plan, progress)
            state.last_commit = self._clock()

    def _flow_adapters(self, flow: str) -> FlowAdapters:
        with self._lock:
            adapters = self._adapters.get(flow)
        if adapters is not None:
            return adapters
        failed = self._adapter_errors.get(flow)
        if failed is not None and self._clock() < failed[0]:
            raise SrmError(failed[1])
        try:
            adapters = self._make_adapters(self._flows[flow])
        except SrmError as exc:
            self._adapter_errors[flow] = (self._clock() + 5, str(exc))
            raise
        with self._lock:
            self._adapters[flow] = adapters
        return adapters

    # -- the job --------------------------------------------------------------------

    def _maintain_job(self, now: float) -> None:
        if self._stopping:
            return
        if self._job_id is not None and not self._job.running():
            self._retire(now)
        if self._retired is not None:
            if not self._quiet(now):
                return
            self._retired = None
        if self._job_id is None:
            with self._lock:
                self._job_id = self._job.start()
                self._epochs.clear()
                self._granted.clear()

    def _retire(self, now: float) -> None:
        """The job ended by itself: every partition is reconciled again once no slot of
        it can write any more."""
        with self._lock:
            old = self._job_id
            assert old is not None
            last_lease = max(self._granted.values(), default=now)
            self._retired = (old, last_lease + self._write_timeout_ms / 1000 + 1)
            self._job_id = None
            for state in self._parts.values():
                if state.status == "running":
                    state.retry_later(now, f"the copy job ended: {self._job.error or 'no reason'}")
                state.stopped = True
                if state.status == "releasing":
                    state.clean = False
        log.error(
            "copy job %s ended (%s); restarting it", old, self._job.error or "no reason given"
        )

    def _quiet(self, now: float) -> bool:
        """No slot of the retired job can still write: none runs in this JVM (local
        mode), or the last lease given to one ran out and its writes timed out."""
        assert self._retired is not None
        if self._job.local and self._job.active_slots() == 0:
            return True
        return now >= self._retired[1]

    def _least_loaded_slot(self) -> int:
        load = dict.fromkeys(range(self._job.slots), 0)
        for state in self._parts.values():
            load[state.slot % self._job.slots] = load.get(state.slot % self._job.slots, 0) + 1
        return min(load, key=lambda slot: (load[slot], slot))


def _with_reserve(plan: PartitionPlan, reserve: int) -> PartitionPlan:
    return PartitionPlan(
        plan.topic, plan.partition, plan.plan, plan.remote, plan.start, plan.down, reserve
    )
