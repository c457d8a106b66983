"""Slot reports in, answers out (HTTP threads).

A report is handled in three steps: decide what to write from it (offset syncs, progress
with the next reservation, a released partition's final progress), write it (syncs
first: progress never covers a copy whose sync is not written), and only then take the
report in (counters, acknowledgements, plans that stopped, a unit that broke:
:mod:`srm_driver.copying.intake`). So nothing the report tells is acted on unless what
it needs is durable: a partition is never reconciled, and never released, before its
syncs and progress are written; a report that could not be written is sent again, whole.

Leases are held per flow, and so is that rule: a flow whose part of a report needs a write
(syncs, progress) that cannot be made now, because this driver holds no lease for the
flow or because the write failed, is *refused*: nothing of that part is written or taken
in, the answer lists the flow under ``refused`` and the slot keeps that part (its syncs,
the stops it saw, an exited unit) to report again. The other flows of the report are
handled as usual. A flow without a lease whose part needs no write is taken in (stops,
breaks, counters), without progress: whoever copies its partitions next verifies from the
last record.

**A slow flow never holds up the answer.** The flows' writes run side by side and the
answer waits for them at most :data:`WRITE_BUDGET_S`: a flow whose write is not done by
then (its cluster is down or slow) is refused for this report and its write goes on
alone; until it ends, that flow's later parts are refused at once (two writes of one
flow never overlap, so progress never goes backwards). So the answers, and with them the
leases of the other flows' units in the same slot, keep coming in time.

One report per slot at a time; a report older than the last one taken is refused. While
a report is being recorded, the slot may ask for its leases alone (:meth:`ReportDesk.keep`),
so a driver slower to answer than a lease does not stop the slot's units. A
report of a new run of the slot (Spark ran its task again) takes the slot over, and one of
a run taken over is answered 410 (:mod:`srm_driver.copying.runs`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for

from srm_common.domain.progress import Progress
from srm_common.errors import SrmError

from srm_driver.copying.answers import Answers
from srm_driver.copying.intake import Intake, watch
from srm_driver.copying.ledger import Ledger
from srm_driver.copying.ports import LEASE_CAP_MS, FlowAdapters
from srm_driver.copying.positions import (
    as_reported,
    commit_due,
    next_progress,
    position,
    sync_records,
)
from srm_driver.copying.protocol import (
    DELTA_PROTOCOL,
    PartitionReport,
    SlotReport,
    SlotRun,
    UnitReport,
)
from srm_driver.copying.runs import admit, take_over
from srm_driver.copying.state import PartitionState
from srm_driver.copying.write_failures import WriteFailures

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
Writes = dict[str, list[tuple[TopicPartition, Progress]]]
Syncs = dict[str, list[tuple[bytes, bytes]]]
NO_LEASE = "cannot record this flow's progress and syncs: this driver holds no lease for it now"
# How long an answer waits for the flows' writes (a healthy write takes milliseconds).
WRITE_BUDGET_S = 1.0


class ReportDesk:
    """Answers the slots of the current job; see the module docstring."""

    def __init__(
        self,
        ledger: Ledger,
        adapters: Mapping[str, FlowAdapters],
        lease_ms: Callable[[str], int],
        stopping: Callable[[], bool],
    ) -> None:
        self._ledger = ledger
        self._adapters = adapters
        self._lease_ms = lease_ms
        self._stopping = stopping
        self._slot_locks: dict[int, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        # Each flow's write still running (at most one per flow), on threads of its own.
        self._writing: dict[str, Future[None]] = {}
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="progress-write")
        self._failures = WriteFailures()  # one log line per flow for writes that keep failing
        self._answers = Answers(ledger, adapters, stopping)
        self._intake = Intake(ledger, adapters, stopping)

    def handle(self, report: SlotReport, now: float) -> tuple[int, dict[str, object]]:
        """The HTTP status and answer to ``report``: each flow's part is written under that
        flow's lease (or refused), and each unit is told the lease its flow has."""
        with self._locks_lock:
            slot_lock = self._slot_locks.setdefault(report.slot, threading.Lock())
        if not slot_lock.acquire(blocking=False):
            # The slot gave up on an answer still being written; this retry waits its turn.
            return 503, {"error": "the previous report of this slot is still being recorded"}
        try:
            return self._handle(report, now)
        finally:
            slot_lock.release()

    def lease(self, flow: str) -> int:
        """What a slot may be given for ``flow`` now, in milliseconds (0: nothing)."""
        return max(0, min(self._lease_ms(flow), LEASE_CAP_MS))

    def _handle(self, report: SlotReport, now: float) -> tuple[int, dict[str, object]]:
        ledger = self._ledger
        # Asked before the ledger's lock is taken (a task source may take locks of its
        # own), and before anything is written: the slot counts a lease from when it sent
        # the report, so it ends no later than this driver's own.
        flows = {*ledger.flows, *(unit.flow for unit in report.units)}
        leases = {flow: self.lease(flow) for flow in flows}
        with ledger.lock:
            with ledger.fence_lock:
                over = self._over(report.slot, report.run)
                if over is not None:
                    return 410, over
                verdict = admit(ledger.runs.get(report.slot), report.run)
                if verdict == "newer":
                    take_over(ledger, report.slot, report.run, now, int(time.time() * 1000))
                    self._answers.forget(report.slot)
                ledger.runs.setdefault(report.slot, report.run)
            if report.seq <= ledger.last_seq.get(report.slot, -1):
                return 409, {"error": f"report {report.seq} is older than one already taken"}
            writing = {flow for flow, lease in leases.items() if lease > 0}
            syncs, progress = self._writes(report, now, writing=writing)
        refused: dict[str, str] = {}
        started: dict[str, Future[None]] = {}
        for flow in sorted({*syncs, *progress}):
            if self.lease(flow) <= 0:
                # No lease for this flow (or it ran out while the report was read):
                # record nothing of its part now.
                leases[flow] = 0
                refused[flow] = NO_LEASE
            elif (busy := self._writing.get(flow)) is not None and not busy.done():
                refused[flow] = "the previous write of this flow's progress has not ended"
            else:
                started[flow] = self._writing[flow] = self._pool.submit(
                    self._write, flow, syncs.get(flow, []), progress.get(flow, [])
                )
        wait_for(started.values(), timeout=WRITE_BUDGET_S)
        for flow, write in started.items():
            if not write.done():
                refused[flow] = f"recording progress takes longer than {WRITE_BUDGET_S:g} s"
                write.add_done_callback(lambda late, flow=flow: _log_late(flow, late))
                continue
            error = write.exception()
            if isinstance(error, SrmError):
                self._failures.failed(report.slot, flow, error, now)
                refused[flow] = f"cannot record progress: {error}"
            elif error is not None:
                raise error
            else:
                self._failures.recorded(flow)
        for flow in refused:
            progress.pop(flow, None)
        written = writing - set(refused)
        with ledger.lock:
            with ledger.fence_lock:
                over = self._over(report.slot, report.run)
            if over is not None:
                # Fenced (lost, or taken over by a newer run) while its writes ran: the
                # fence counted from the leases granted before it; this run gets none.
                return 410, over
            for flow, error in refused.items():
                ledger.unit_errors[flow] = error
            self._intake.take(report, progress, now, written=written, refused=set(refused))
            ledger.last_seq[report.slot] = report.seq
            ledger.reported(report.slot, now)
            answer = self._answers.answer(report, leases, set(refused))
            units = answer["units"]
            assert isinstance(units, dict)
            with ledger.fence_lock:
                # Checked again: a fence is only made under both locks, so none came
                # since; the slot's leases now count into its next one.
                ledger.slot_flows[report.slot] = frozenset(units)
                self._grant(report.slot, now, (leases.get(flow, 0) for flow in units))
            return 200, answer

    def keep(self, slot: int, run: SlotRun, now: float) -> tuple[int, dict[str, object]]:
        """The HTTP status and answer to a slot that asks for its leases alone while the
        answer to its report is late (copying/protocol.py): each flow with partitions on
        the slot gets its lease, as an answer would give it, under the same fence (410 for
        a run fenced or taken over, checked under the lock that fences); nothing else is
        read or changed, and the slot is heard from. ``recording``: whether a report of
        the slot is being recorded now."""
        ledger = self._ledger
        # Asked before the ledger's lock, as for a report (a task source may take locks of
        # its own); ``now`` was read when the request arrived, after the slot sent it.
        leases = {flow: self.lease(flow) for flow in list(ledger.flows)}
        # The fence lock alone, never the ledger's: a report being recorded holds that
        # for as long as its partitions take (copying/ledger.py).
        with ledger.fence_lock:
            over = self._over(slot, run)
            if over is not None:
                return 410, over
            current = ledger.runs.get(slot)
            if current is None or current.id != run.id:
                return 409, {
                    "error": f"no report of this run of copy slot {slot} ({run}) was taken in"
                    " yet: its leases come with the answer to its first"
                }
            # The flows of its last answer: the units it runs (a unit learns of a flow,
            # and of its last partition leaving, only from an answer).
            units = {
                flow: {"lease_ms": leases.get(flow, 0)}
                for flow in sorted(ledger.slot_flows.get(slot, ()))
            }
            self._grant(slot, now, (leases.get(flow, 0) for flow in units))
            if slot in ledger.live_slots:
                # Alive and reaching this driver: a report slow to be recorded is not the
                # slot's silence (copying/slots.py).
                ledger.live_slots[slot] = max(ledger.live_slots[slot], now)
        # Whether a report of the slot is being recorded now: when none is, the one the
        # slot waits for was answered or never arrived, and it reports again.
        recording = (lock := self._slot_locks.get(slot)) is not None and lock.locked()
        return 200, {"protocol": DELTA_PROTOCOL, "units": units, "recording": recording}

    def _grant(self, slot: int, now: float, leases: Iterable[int]) -> None:
        """Only units write, each under its own lease: the slot's last write ends with the
        longest of ``leases``, counted from ``now``. Call under the fence lock."""
        longest = max(leases, default=0)
        if longest > 0:
            until = now + longest / 1000
            self._ledger.granted[slot] = max(self._ledger.granted.get(slot, until), until)

    def _over(self, slot: int, run: SlotRun) -> dict[str, object] | None:
        """Why ``run`` of ``slot`` may not be answered any more (410), or None. Call under
        the fence lock."""
        ledger = self._ledger
        if (slot, run.id) in ledger.fenced_runs:
            return {
                "error": f"copy slot {slot} was lost: this run ({run}) is over;"
                " its partitions moved to other slots"
            }
        if admit(ledger.runs.get(slot), run) == "superseded":
            return {
                "error": f"copy slot {slot} runs again"
                f" ({ledger.runs[slot]}): this run ({run}) is over"
            }
        return None

    # -- step 1: what to write ---------------------------------------------------------

    def _writes(self, report: SlotReport, now: float, *, writing: set[str]) -> tuple[Syncs, Writes]:
        """Syncs and progress the report asks for (progress only of the flows ``writing``,
        those this driver holds a lease for); changes nothing."""
        syncs: Syncs = {}
        progress: Writes = {}
        for unit in report.units:
            adapters = self._adapters.get(unit.flow)
            if adapters is None:
                continue
            window = adapters.flow.batch_max_records
            interval = adapters.flow.commit_interval_ms / 1000
            for state, part, listed in self._entries(report, unit):
                if listed:
                    records = sync_records(part.topic, part.partition, part.syncs)
                    if records:
                        syncs.setdefault(unit.flow, []).extend(records)
                if unit.flow not in writing or state.progress is None:
                    continue
                now_state = (
                    as_reported(state, part)
                    if listed
                    else state  # taken in already: the state holds this entry's positions
                )
                final = (state.status == "releasing" or self._stopping()) and part.stopped
                # A send of unknown fate (its unit broke, its producer let go) may still
                # land: then no final progress, so the recorded reservation still covers
                # it and the next holder verifies past the position.
                if final and part.error is None and unit.broken is None and not part.uncertain:
                    update = position(now_state).reserved(None)
                elif not part.stopped and commit_due(
                    now_state, part, now, window=window, interval_s=interval
                ):
                    update = next_progress(now_state, window)
                else:
                    continue
                progress.setdefault(unit.flow, []).append((state.key, update))
        return syncs, progress

    def _entries(
        self, report: SlotReport, unit: UnitReport
    ) -> Iterator[tuple[PartitionState, PartitionReport, bool]]:
        """The unit's entries of the driver's current plans: those listed in ``report``
        (True) and, when the report is a delta, the last one taken in of each plan it left
        out (False: unchanged since; its syncs were written then). Commits that came due
        with time alone, and a release's final progress, are made from those."""
        parts = self._ledger.parts
        listed = set()
        for part in unit.partitions:
            state = parts.get(unit.flow, part.key)
            if state is None or part.plan != state.last_plan:
                continue
            listed.add(part.key)
            yield state, part, True
        if report.full:
            return
        if self._stopping():
            unlisted = parts.of_slot(report.slot, unit.flow)  # every final progress is due
        else:
            unlisted = [s for s in parts.watched(report.slot, watch) if s.flow == unit.flow]
        for state in unlisted:
            last = state.reported
            if last is not None and last.plan == state.last_plan and state.key not in listed:
                yield state, last, False

    def _write(
        self,
        flow: str,
        syncs: list[tuple[bytes, bytes]],
        progress: list[tuple[TopicPartition, Progress]],
    ) -> None:
        """One flow's part: syncs first, then the progress that may cover them."""
        if syncs:
            self._adapters[flow].syncs.write(syncs)
        if progress:
            self._adapters[flow].store.write(progress)


def _log_late(flow: str, write: Future[None]) -> None:
    error = write.exception()
    if error is not None:
        log.error("cannot record progress of %s: %s", flow, error)
