"""Taking a slot's report in, once what it needs is written (step 3 of
:mod:`srm_driver.copying.reports`): counters and acknowledgements, plans that stopped, a
unit that broke, plans that never ran, a release that ended.

Nothing here reads Kafka or writes: the report desk calls :meth:`Intake.take` under the
ledger's lock after the flows' syncs and progress were written, with the flows whose part
it refused (their part is kept by the slot and comes again) and those whose progress was
written. Work follows the report: the partitions it lists, and those of the slot being
*watched* (:func:`watch`: a release under way, a plan left out and not yet seen stopped,
acknowledgements no progress covers yet), not every partition of the slot.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from srm_common.domain.progress import Progress

from srm_driver.copying.ledger import Ledger
from srm_driver.copying.ports import FlowAdapters
from srm_driver.copying.positions import with_reserve
from srm_driver.copying.protocol import Failure, PartitionReport, SlotReport, UnitReport
from srm_driver.copying.state import Counters, PartitionState

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
Writes = dict[str, list[tuple[TopicPartition, Progress]]]


class Intake:
    """Takes reports in for one copy job's ledger; see the module docstring."""

    def __init__(
        self,
        ledger: Ledger,
        adapters: Mapping[str, FlowAdapters],
        stopping: Callable[[], bool],
    ) -> None:
        self._ledger = ledger
        self._adapters = adapters
        self._stopping = stopping

    def take(
        self,
        report: SlotReport,
        progress: Writes,
        now: float,
        *,
        written: set[str],
        refused: set[str],
    ) -> None:
        """Take in every part of ``report`` but those of the ``refused`` flows; ``written``:
        the flows whose progress could be recorded (those with a lease, not refused)."""
        ledger = self._ledger
        stops: list[tuple[PartitionState, PartitionReport, UnitReport]] = []
        units = [unit for unit in report.units if unit.flow not in refused]
        for unit in units:
            if unit.flow not in self._adapters:
                continue
            if unit.poll_error:
                ledger.unit_errors[unit.flow] = unit.poll_error
            else:
                ledger.unit_errors.pop(unit.flow, None)
            for part in unit.partitions:
                state = ledger.parts.get(unit.flow, part.key)
                if state is None or part.plan != state.last_plan:
                    continue
                counters = Counters.of(part)
                ledger.counted(state, counters.since(state.seen))
                state.seen = counters
                state.source_end, state.pending_ts = part.source_end, part.pending_ts
                state.acked = (part.acked_up, part.acked_down)
                state.next_send = part.next_send
                state.uncertain = part.uncertain
                state.reported = part
                ledger.parts.watch(state)  # kept while its progress may come due unlisted
                if part.stopped and not state.stopped:
                    stops.append((state, part, unit))
        self._written(progress, now)
        for state, part, unit in stops:
            if ledger.parts.get(state.flow, state.key) is state:
                self._stopped(state, part, unit, now)
        for unit in units:
            if unit.flow in self._adapters:
                self._broken(report.slot, unit, now, full=report.full)
        self._never_ran(report, refused)
        for state in ledger.parts.watched(report.slot, watch):
            if (
                state.status == "releasing"
                and state.stopped
                and state.flow not in refused
                and now >= state.fenced_until
            ):
                # Released with nothing final recorded: the next holder reconciles (and
                # verifies) from the last record.
                if not state.clean or state.progress is None or state.flow not in written:
                    ledger.parts.remove(state)

    def _stopped(
        self, state: PartitionState, part: PartitionReport, unit: UnitReport, now: float
    ) -> None:
        """The slot says the partition's plan stopped: nothing of it is outstanding."""
        state.stopped = True
        state.clean = part.error is None and unit.broken is None and not part.uncertain
        if state.status in ("releasing", "halted"):
            return
        if part.error is not None:
            self._ledger.failed(state, part.error, now)
        elif self._stopping():
            state.status = "releasing"
        elif unit.broken is None and state.status == "running":
            state.retry_later(now, "the copy loop stopped")
        self._ledger.settle(state, now)

    def _broken(self, slot: int, unit: UnitReport, now: float, *, full: bool = True) -> None:
        """A unit that broke (or whose loop ended unasked) at the current epoch: a new
        epoch, and every partition it ran is planned again: the blamed one counts a
        failure and is reconciled, as is every partition with a copy in flight or of
        unknown fate; the others restart where they were acknowledged
        (:func:`~srm_driver.copying.positions.exact_restart`). A plan it never applied
        stopped too: it never will."""
        ledger = self._ledger
        failure = unit.broken
        if failure is None and not unit.exited:
            return  # the unit runs (every report says so): nothing of it is walked
        mine = ledger.parts.of_slot(slot, unit.flow)
        if unit.exited and failure is None and not self._stopping() and mine:
            failure = Failure("transient", "the copy loop of this flow ended unexpectedly")
        epoch = ledger.epochs.get((slot, unit.flow), 0)
        if failure is None or (unit.broken is not None and unit.broken_epoch != epoch):
            return
        ledger.epochs[(slot, unit.flow)] = epoch + 1
        reported = {part.key for part in unit.partitions}
        blamed = failure.partition_key
        for state in mine:
            if not full and known(state):
                reported.add(state.key)  # left out of a delta: unchanged, so it ran
        for state in mine:
            if state.status == "running":
                if state.key == blamed:
                    ledger.failed(state, failure, now)
                else:
                    state.retry_later(now, None)
                    state.backoff = 0.0  # innocent: only the settle delay of a broken unit
                    if unit.broken is not None:
                        # Restarted where it was acknowledged if nothing of it was in
                        # flight (positions.exact_restart), not reconciled.
                        state.innocent_plan, state.innocent_at = state.last_plan, now
            if state.key not in reported and not state.stopped:
                state.stopped, state.clean = True, False
            ledger.settle(state, now)
        if failure.kind != "lease":
            log.warning(
                "%s: copy slot %d stopped on %s: %s", unit.flow, slot, failure.kind, failure.message
            )
        else:
            # No answer reached the slot in time (a driver slow to record reports, or one
            # holding no lease for the flow): expected now and then, so not a warning, but
            # every partition of the unit is planned again and that must show.
            log.info(
                "%s: copy slot %d stopped: %s; its %d partitions are planned again",
                unit.flow,
                slot,
                failure.message,
                len(mine),
            )

    def _never_ran(self, report: SlotReport, refused: set[str]) -> None:
        """A plan left out of an answer the slot (or the flow's unit) has since applied,
        and not in this report, is not running: either it never started (it was withdrawn
        before the unit applied it) or the driver saw it stopped already."""
        units = {unit.flow: unit for unit in report.units}
        for state in self._ledger.parts.watched(report.slot, watch):
            since = state.omitted_since
            if state.stopped or since is None:
                continue
            if state.flow in refused:
                continue
            unit = units.get(state.flow)
            if unit is None:
                gone = report.answered >= since
            else:
                listed = any(
                    part.key == state.key and part.plan == state.last_plan
                    for part in unit.partitions
                )
                if not listed and not report.full:
                    listed = known(state)  # left out of a delta: unchanged, so it runs
                gone = unit.applied >= since and not listed
            if gone:
                state.stopped, state.clean = True, False

    def _written(self, progress: Writes, now: float) -> None:
        ledger = self._ledger
        for flow, updates in progress.items():
            ledger.unit_errors.pop(flow, None)
            for key, written in updates:
                state = ledger.parts.get(flow, key)
                if state is None:
                    continue
                if written.inflight_end is None:  # a release's final progress
                    ledger.parts.remove(state)
                    log.info("%s: released %s-%d at %d", flow, *key, written.next_upstream)
                    continue
                if state.status != "running" or state.plan is None:
                    continue  # the plan ended meanwhile: its claim decides, not this
                state.progress, state.last_commit = written, now
                state.reserve = max(state.reserve, written.inflight_end)
                state.plan = with_reserve(state.plan, state.reserve)


def watch(state: PartitionState) -> bool:
    """Whether a report must look at ``state`` even when its slot does not list it: it is
    being released, its plan was left out of an answer and it is not seen stopped, or its
    last entry taken in holds acknowledgements (or a wait at the reservation) that no
    progress written covers yet: a commit may come due with time alone. (Only a change of
    the state brings one of these back, and that watches it again: copying/parts.py.)"""
    if state.status == "releasing":
        return True
    if state.omitted_since is not None and not state.stopped:
        return True
    last, progress = state.reported, state.progress
    if state.status != "running" or progress is None or last is None:
        return False
    if last.plan != state.last_plan:
        return False
    return last.state == "waiting_reservation" or last.acked_up > progress.next_upstream


def known(state: PartitionState) -> bool:
    """The slot reported the partition's last plan before (so it ran there)."""
    return state.reported is not None and state.reported.plan == state.last_plan
