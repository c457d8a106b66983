"""Partitions of a broken unit restarted where their copies were acknowledged, without
reading Kafka or recording a claim (:func:`~srm_driver.copying.positions.exact_restart`):
the planner's fast path after a unit broke over another partition
(:mod:`~srm_driver.copying.planner` decides which partitions are due and sends the rest to
be reconciled). It trusts that nobody else wrote such a partition since its unit broke,
which holds while this driver kept the flow's lease without a gap (the coordinator waits
a lease out before it gives a driver's partitions to another): the lease's holder says
since when (:meth:`~srm_driver.tasks.TaskSource.lease_held_since`), however long a pass
over the flow takes."""

from __future__ import annotations

import logging
from collections.abc import Callable

from srm_common.errors import SrmError

from srm_driver.copying.ledger import Ledger
from srm_driver.copying.ports import FlowAdapters
from srm_driver.copying.positions import exact_restart, plan_at
from srm_driver.copying.running_checks import TopicCodecs
from srm_driver.copying.state import PartitionState

log = logging.getLogger(__name__)


class ExactRestarts:
    """See the module docstring."""

    def __init__(
        self,
        ledger: Ledger,
        adapters: Callable[[str], FlowAdapters],
        held_since: Callable[[str], float | None],
        clock: Callable[[], float],
        codecs: TopicCodecs,
    ) -> None:
        self._ledger = ledger
        self._adapters = adapters
        self.held_since = held_since
        self._clock = clock
        self._codecs = codecs

    def sweep(self, flow: str, now: float, live: Callable[[float], list[int]]) -> None:
        """Restart the partitions of a unit that broke while a long planning pass was
        reconciling others (the planner calls this between its chunks): those on a slot
        that answers, due and needing no move; the others wait for the next pass. A
        pass over thousands of new partitions lasts minutes on a loaded cluster, and
        their slot's other partitions would stand still that long."""
        held_since = self.held_since(flow)
        if held_since is None:
            return
        with self._ledger.lock:
            slots = set(live(now))
            due = [
                state
                for state in self._ledger.parts.unsettled(flow)
                if state.innocent_plan >= 0
                and state.status == "pending"
                and state.stopped
                and now >= state.retry_at
                and state.moving_to is None
                and state.slot in slots
                and exact_restart(state, held_since) is not None
            ]
        if due:
            self.restart(flow, due, held_since)  # (any it sends back: the next pass)

    def restart(
        self, flow: str, states: list[PartitionState], held_since: float
    ) -> list[PartitionState]:
        """Plan ``states`` (whose unit broke over another partition) where their copies
        were acknowledged, without reading Kafka or recording a claim
        (:func:`~srm_driver.copying.positions.exact_restart`); returns those that must be
        reconciled after all: all of them into a shared remote partition (where other
        writers' records lie after ours, so our last copy must be found there), or when
        the flow's lease or adapters are not there now (reconciling says why)."""
        try:
            every = self._adapters(flow).shared
        except SrmError:
            every = True
        now = self._clock()
        if not every:
            # Asked again: the lease must still be the one held since the break.
            again = self.held_since(flow)
            every = again is None or again > held_since
        reconcile: list[PartitionState] = []
        restarted = 0
        with self._ledger.lock:
            for state in states:
                if state.status != "pending" or now < state.fenced_until:
                    continue  # (taken over meanwhile: the next pass says why)
                at = None if every else exact_restart(state, held_since)
                if at is None or state.progress is None:
                    state.innocent_plan = -1
                    reconcile.append(state)
                    continue
                reserve = max(state.reserve, state.progress.inflight_end or 0)
                plan_id, codec = self._ledger.new_plan_id(), self._codecs.of(flow, state.key[0])
                state.running(plan_at(state, plan_id, *at, reserve, codec), state.progress)
                restarted += 1
            counts = self._ledger.exact_restarts
            counts[flow] = counts.get(flow, 0) + restarted
        if restarted:
            log.info(
                "%s: %d partitions of a copy unit that broke over another partition restart"
                " where their copies were acknowledged (nothing of theirs was in flight)",
                flow,
                restarted,
            )
        return reconcile
