"""Slot reports in, answers out (HTTP threads).

A report is handled in three steps: decide what to write from it (offset syncs, progress
with the next reservation, a released partition's final progress), write it (syncs
first: progress never covers a copy whose sync is not written), and only then take the
report in (counters, acknowledgements, plans that stopped, a unit that broke). So
nothing the report tells is acted on unless what it needs is durable: a partition is
never reconciled, and never released, before its syncs and progress are written; a
report that could not be written is answered 503 and sent again, whole.

One report per slot at a time; a report older than the last one taken is refused.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace

from srm_common.domain.progress import Progress
from srm_common.errors import SrmError

from srm_driver.copying.ledger import Ledger
from srm_driver.copying.ports import FlowAdapters
from srm_driver.copying.positions import (
    commit_due,
    next_progress,
    position,
    sync_records,
    with_reserve,
)
from srm_driver.copying.protocol import Failure, PartitionReport, SlotReport, UnitReport
from srm_driver.copying.state import Counters, PartitionState

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
REPORT_MS = 200
Writes = dict[str, list[tuple[TopicPartition, Progress]]]
Syncs = dict[str, list[tuple[bytes, bytes]]]


class ReportDesk:
    """Answers the slots of the current job; see the module docstring."""

    def __init__(
        self,
        ledger: Ledger,
        adapters: Mapping[str, FlowAdapters],
        lease_ms: Callable[[], int],
        stopping: Callable[[], bool],
    ) -> None:
        self._ledger = ledger
        self._adapters = adapters
        self._lease_ms = lease_ms
        self._stopping = stopping
        self._slot_locks: dict[int, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def handle(self, report: SlotReport, lease: int, now: float) -> tuple[int, dict[str, object]]:
        """The HTTP status and answer to ``report``; ``lease`` (ms) is what the driver
        holds now: without one nothing is written and the slot is told so."""
        with self._locks_lock:
            slot_lock = self._slot_locks.setdefault(report.slot, threading.Lock())
        if not slot_lock.acquire(blocking=False):
            # The slot gave up on an answer still being written; this retry waits its turn.
            return 503, {"error": "the previous report of this slot is still being recorded"}
        try:
            return self._handle(report, lease, now)
        finally:
            slot_lock.release()

    def _handle(self, report: SlotReport, lease: int, now: float) -> tuple[int, dict[str, object]]:
        ledger = self._ledger
        with ledger.lock:
            if report.seq <= ledger.last_seq.get(report.slot, -1):
                return 409, {"error": f"report {report.seq} is older than one already taken"}
            syncs, progress = self._writes(report, now, writing=lease > 0)
        if (syncs or progress) and self._lease_ms() <= 0:
            # The lease ran out while the report was read: record nothing of it now.
            return 503, {"error": "this driver holds no lease now"}
        try:
            self._write(syncs, progress)
        except SrmError as exc:
            log.error("copy slot %d: cannot record progress: %s", report.slot, exc)
            with ledger.lock:
                for flow in {*syncs, *progress}:
                    ledger.unit_errors[flow] = f"cannot record progress: {exc}"
            return 503, {"error": f"cannot record progress: {exc}"}
        with ledger.lock:
            self._take(report, progress, now, written=lease > 0)
            ledger.last_seq[report.slot] = report.seq
            if lease > 0:
                ledger.granted[report.slot] = now + lease / 1000
            ledger.live_slots[report.slot] = now
            return 200, self._answer(report.slot, lease, report.seq)

    # -- step 1: what to write ---------------------------------------------------------

    def _writes(self, report: SlotReport, now: float, *, writing: bool) -> tuple[Syncs, Writes]:
        """Syncs and progress the report asks for; changes nothing."""
        syncs: Syncs = {}
        progress: Writes = {}
        for unit in report.units:
            adapters = self._adapters.get(unit.flow)
            if adapters is None:
                continue
            window = adapters.flow.batch_max_records
            interval = adapters.flow.commit_interval_ms / 1000
            for part in unit.partitions:
                state = self._ledger.parts.get((unit.flow, part.key))
                if state is None or part.plan != state.last_plan:
                    continue
                records = sync_records(part.topic, part.partition, part.syncs)
                if records:
                    syncs.setdefault(unit.flow, []).extend(records)
                if not writing or state.progress is None:
                    continue
                now_state = replace(
                    state, acked=(part.acked_up, part.acked_down), next_send=part.next_send
                )
                final = (state.status == "releasing" or self._stopping()) and part.stopped
                if final and part.error is None and unit.broken is None:
                    update = position(now_state).reserved(None)
                elif not part.stopped and commit_due(
                    now_state, part, now, window=window, interval_s=interval
                ):
                    update = next_progress(now_state, window)
                else:
                    continue
                progress.setdefault(unit.flow, []).append((state.key, update))
        return syncs, progress

    def _write(self, syncs: Syncs, progress: Writes) -> None:
        for flow, records in syncs.items():
            if records:
                self._adapters[flow].syncs.write(records)
        for flow, updates in progress.items():
            if updates:
                self._adapters[flow].store.write(updates)

    # -- step 3: take the report in (after the writes) ------------------------------------

    def _take(self, report: SlotReport, progress: Writes, now: float, *, written: bool) -> None:
        ledger = self._ledger
        stops: list[tuple[PartitionState, PartitionReport, UnitReport]] = []
        for unit in report.units:
            if unit.flow not in self._adapters:
                continue
            if unit.poll_error:
                ledger.unit_errors[unit.flow] = unit.poll_error
            else:
                ledger.unit_errors.pop(unit.flow, None)
            for part in unit.partitions:
                state = ledger.parts.get((unit.flow, part.key))
                if state is None or part.plan != state.last_plan:
                    continue
                counters = Counters.of(part)
                state.totals.add(counters.since(state.seen))
                state.seen = counters
                state.acked = (part.acked_up, part.acked_down)
                state.next_send = part.next_send
                state.uncertain = part.uncertain
                if part.stopped and not state.stopped:
                    stops.append((state, part, unit))
        self._written(progress, now)
        for state, part, unit in stops:
            if ledger.parts.get((state.flow, state.key)) is state:
                self._stopped(state, part, unit, now)
        for unit in report.units:
            if unit.flow in self._adapters:
                self._broken(report.slot, unit, now)
        self._never_ran(report)
        for (flow, key), state in list(ledger.parts.items()):
            if state.status == "releasing" and state.stopped:
                # Released with nothing final recorded: the next holder reconciles (and
                # verifies) from the last record.
                if not state.clean or state.progress is None or not written:
                    del ledger.parts[(flow, key)]

    def _stopped(
        self, state: PartitionState, part: PartitionReport, unit: UnitReport, now: float
    ) -> None:
        """The slot says the partition's plan stopped: nothing of it is outstanding."""
        state.stopped = True
        state.clean = part.error is None and unit.broken is None
        if state.status in ("releasing", "halted"):
            return
        if part.error is not None:
            self._ledger.failed(state, part.error, now)
        elif self._stopping():
            state.status = "releasing"
        elif unit.broken is None and state.status == "running":
            state.retry_later(now, "the copy loop stopped")
        self._ledger.settle(state, now)

    def _broken(self, slot: int, unit: UnitReport, now: float) -> None:
        """A unit that broke (or whose loop ended unasked) at the current epoch: a new
        epoch, and every partition it ran is reconciled again (the blamed one counts a
        failure). A plan it never applied stopped too: it never will."""
        ledger = self._ledger
        failure = unit.broken
        mine = [s for s in ledger.of_flow(unit.flow) if s.slot == slot]
        if unit.exited and failure is None and not self._stopping() and mine:
            failure = Failure("transient", "the copy loop of this flow ended unexpectedly")
        epoch = ledger.epochs.get((slot, unit.flow), 0)
        if failure is None or (unit.broken is not None and unit.broken_epoch != epoch):
            return
        ledger.epochs[(slot, unit.flow)] = epoch + 1
        reported = {part.key for part in unit.partitions}
        blamed = failure.partition_key
        for state in mine:
            if state.status == "running":
                if state.key == blamed:
                    ledger.failed(state, failure, now)
                else:
                    state.retry_later(now, None)
                    state.backoff = 0.0  # innocent: only the settle delay of a broken unit
            if state.key not in reported and not state.stopped:
                state.stopped, state.clean = True, False
            ledger.settle(state, now)
        if failure.kind != "lease":
            log.warning(
                "%s: copy slot %d stopped on %s: %s", unit.flow, slot, failure.kind, failure.message
            )

    def _never_ran(self, report: SlotReport) -> None:
        """A plan left out of an answer the slot (or the flow's unit) has since applied,
        and not in this report, is not running: either it never started (it was withdrawn
        before the unit applied it) or the driver saw it stopped already."""
        units = {unit.flow: unit for unit in report.units}
        for state in self._ledger.parts.values():
            since = state.omitted_since
            if state.slot != report.slot or state.stopped or since is None:
                continue
            unit = units.get(state.flow)
            if unit is None:
                gone = report.answered >= since
            else:
                listed = any(
                    part.key == state.key and part.plan == state.last_plan
                    for part in unit.partitions
                )
                gone = unit.applied >= since and not listed
            if gone:
                state.stopped, state.clean = True, False

    def _written(self, progress: Writes, now: float) -> None:
        ledger = self._ledger
        for flow, updates in progress.items():
            ledger.unit_errors.pop(flow, None)
            for key, written in updates:
                state = ledger.parts.get((flow, key))
                if state is None:
                    continue
                if written.inflight_end is None:  # a release's final progress
                    del ledger.parts[(flow, key)]
                    log.info("%s: released %s-%d at %d", flow, *key, written.next_upstream)
                    continue
                if state.status != "running" or state.plan is None:
                    continue  # the plan ended meanwhile: its claim decides, not this
                state.progress, state.last_commit = written, now
                state.reserve = max(state.reserve, written.inflight_end)
                state.plan = with_reserve(state.plan, state.reserve)

    def _answer(self, slot: int, lease: int, version: int) -> dict[str, object]:
        units: dict[str, object] = {}
        for flow, adapters in self._adapters.items():
            mine = [s for s in self._ledger.of_flow(flow) if s.slot == slot]
            plans = []
            for state in mine:
                if state.status == "running" and state.plan is not None:
                    plans.append(state.plan.to_json())
                elif not state.stopped and state.omitted_since is None:
                    state.omitted_since = version
            if mine:
                units[flow] = {
                    "epoch": self._ledger.epochs.get((slot, flow), 0),
                    "settings": adapters.settings.to_json(),
                    "partitions": plans,
                }
        return {
            "version": version,
            "lease_ms": lease,
            "report_ms": REPORT_MS,
            "stop": self._stopping(),
            "units": units,
        }
