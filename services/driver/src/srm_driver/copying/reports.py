"""Slot reports in, answers out (HTTP threads): acknowledgements and counters taken, offset
syncs then progress written (syncs first: progress never covers a copy whose sync is not
written), a broken unit's partitions sent back to be reconciled, and the slot's desired
state and lease answered."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

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
from srm_driver.copying.protocol import Failure, SlotReport, UnitReport
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
        stopping: Callable[[], bool],
    ) -> None:
        self._ledger = ledger
        self._adapters = adapters
        self._stopping = stopping

    def handle(self, report: SlotReport, lease: int, now: float) -> tuple[int, dict[str, object]]:
        """The HTTP status and answer to ``report``; ``lease`` (ms) is what the driver
        holds now: without one nothing is written and the slot is told so."""
        ledger = self._ledger
        with ledger.lock:
            syncs, progress = self._take(report, now, writing=lease > 0)
        try:
            self._write(syncs, progress)
        except SrmError as exc:
            log.error("copy slot %d: cannot record progress: %s", report.slot, exc)
            with ledger.lock:
                for flow in progress:
                    ledger.unit_errors[flow] = f"cannot record progress: {exc}"
            return 503, {"error": f"cannot record progress: {exc}"}
        with ledger.lock:
            self._written(progress, now)
            if lease > 0:
                ledger.granted[report.slot] = now + lease / 1000
            return 200, self._answer(report.slot, lease)

    def _take(self, report: SlotReport, now: float, *, writing: bool) -> tuple[Syncs, Writes]:
        ledger = self._ledger
        syncs: Syncs = {}
        progress: Writes = {}
        for unit in report.units:
            adapters = self._adapters.get(unit.flow)
            if adapters is None:
                continue
            if unit.poll_error:
                ledger.unit_errors[unit.flow] = unit.poll_error
            else:
                ledger.unit_errors.pop(unit.flow, None)
            window = adapters.flow.batch_max_records
            interval = adapters.flow.commit_interval_ms / 1000
            for part in unit.partitions:
                state = ledger.parts.get((unit.flow, part.key))
                if state is None or part.plan != state.last_plan:
                    continue
                counters = Counters.of(part)
                state.totals.add(counters.since(state.seen))
                state.seen = counters
                state.acked = (part.acked_up, part.acked_down)
                state.next_send = part.next_send
                syncs.setdefault(unit.flow, []).extend(
                    sync_records(part.topic, part.partition, part.syncs)
                )
                if part.stopped:
                    self._stopped(state, part.error, unit, now)
                elif writing and commit_due(state, part, now, window=window, interval_s=interval):
                    progress.setdefault(unit.flow, []).append(
                        (state.key, next_progress(state, window))
                    )
                if state.status == "releasing" and state.stopped:
                    if not state.clean or state.progress is None:
                        # The next holder reconciles (and verifies) from the last record.
                        del ledger.parts[(unit.flow, part.key)]
                    elif writing:
                        progress.setdefault(unit.flow, []).append(
                            (state.key, position(state).reserved(None))
                        )
            self._broken(report.slot, unit, now)
        return syncs, progress

    def _stopped(
        self, state: PartitionState, error: Failure | None, unit: UnitReport, now: float
    ) -> None:
        """The slot says the partition's plan stopped: nothing of it is outstanding."""
        state.stopped = True
        state.clean = error is None and unit.broken is None
        if state.status in ("releasing", "halted"):
            return
        if error is not None:
            self._ledger.failed(state, error, now)
        elif self._stopping():
            state.status = "releasing"
        elif unit.broken is None and state.status == "running":
            state.retry_later(now, "the copy loop stopped")

    def _broken(self, slot: int, unit: UnitReport, now: float) -> None:
        """A unit that broke (or whose loop ended) at the current epoch: a new epoch, and
        every partition it ran is reconciled again (the blamed one counts a failure)."""
        ledger = self._ledger
        failure = unit.broken
        if unit.exited and failure is None and not self._stopping():
            failure = Failure("transient", "the copy loop of this flow ended unexpectedly")
        epoch = ledger.epochs.get((slot, unit.flow), 0)
        if failure is None or (unit.broken is not None and unit.broken_epoch != epoch):
            return
        ledger.epochs[(slot, unit.flow)] = epoch + 1
        blamed = failure.partition_key
        for state in ledger.of_flow(unit.flow):
            if state.slot != slot or state.status != "running":
                continue
            if state.key == blamed:
                ledger.failed(state, failure, now)
            else:
                state.retry_later(now, None)
                state.backoff = 0.0  # innocent: only the settle delay of a broken unit
        if failure.kind != "lease":
            log.warning(
                "%s: copy slot %d stopped on %s: %s", unit.flow, slot, failure.kind, failure.message
            )

    def _write(self, syncs: Syncs, progress: Writes) -> None:
        for flow, records in syncs.items():
            if records:
                self._adapters[flow].syncs.write(records)
        for flow, updates in progress.items():
            if updates:
                self._adapters[flow].store.write(updates)

    def _written(self, progress: Writes, now: float) -> None:
        ledger = self._ledger
        for flow, updates in progress.items():
            ledger.unit_errors.pop(flow, None)
            for key, written in updates:
                state = ledger.parts.get((flow, key))
                if state is None:
                    continue
                state.progress = written
                state.last_commit = now
                if state.status == "running" and written.inflight_end is not None:
                    state.reserve = max(state.reserve, written.inflight_end)
                    if state.plan is not None:
                        state.plan = with_reserve(state.plan, state.reserve)
                elif state.status == "releasing" and written.inflight_end is None:
                    del ledger.parts[(flow, key)]
                    log.info("%s: released %s-%d at offset %d", flow, *key, written.next_upstream)

    def _answer(self, slot: int, lease: int) -> dict[str, object]:
        units: dict[str, object] = {}
        for flow, adapters in self._adapters.items():
            mine = [s for s in self._ledger.of_flow(flow) if s.slot == slot]
            if not mine:
                continue
            units[flow] = {
                "epoch": self._ledger.epochs.get((slot, flow), 0),
                "settings": adapters.settings.to_json(),
                "partitions": [
                    s.plan.to_json() for s in mine if s.status == "running" and s.plan is not None
                ],
            }
        return {"lease_ms": lease, "report_ms": REPORT_MS, "stop": self._stopping(), "units": units}
