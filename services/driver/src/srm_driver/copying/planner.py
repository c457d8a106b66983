"""Plans (the runtime thread): pending partitions reconciled from Kafka and given a plan,
or halted; running partitions whose topics were deleted or recreated sent back.

Reads happen outside the ledger's lock; a claim (progress with the reservation, and the
syncs of verified records) is written before the plan is handed out.

Leases are held per flow: a flow this driver holds no lease for now is neither reconciled
nor checked; its pending partitions wait (saying why) while other flows go on."""

from __future__ import annotations

import logging
from collections.abc import Callable

from srm_common.domain.progress import Halt, PartitionFacts, Progress, Resume
from srm_common.errors import SrmError

from srm_driver.copying.ledger import Ledger
from srm_driver.copying.ports import FlowAdapters
from srm_driver.copying.positions import position, sync_records
from srm_driver.copying.protocol import PartitionPlan
from srm_driver.copying.restart import decide_restart, identity_changed
from srm_driver.copying.state import PartitionState, ResumeRequest

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# How often the topics of running partitions are checked for deletion or recreation (by
# topic id); the copy loops' clients do not tell.
IDENTITY_CHECK_S = 2.0
# A slot that has not reported for this long is not given new plans.
SLOT_SILENT_S = 5.0
NO_LEASE = (
    "no lease for this flow: this driver cannot confirm now that it may write into the"
    " target cluster (its control is unreachable, or this driver is not a member there yet)"
)


class Planner:
    """See the module docstring."""

    def __init__(
        self,
        ledger: Ledger,
        adapters: Callable[[str], FlowAdapters],
        lease_ms: Callable[[str], int],
        clock: Callable[[], float],
    ) -> None:
        self._ledger = ledger
        self._adapters = adapters
        self._lease_ms = lease_ms
        self._clock = clock
        self._identity_due: dict[str, float] = {}

    def plan_due(self, now: float) -> None:
        """Reconcile every pending partition whose last plan stopped and whose retry is due."""
        due: dict[str, list[PartitionState]] = {}
        # Asked before taking the ledger's lock: a task source may take locks of its own.
        leased = {flow: self._lease_ms(flow) > 0 for flow in self._ledger.flows}
        with self._ledger.lock:
            live = [s for s, seen in self._ledger.live_slots.items() if now - seen < SLOT_SILENT_S]
            for (flow, key), state in list(self._ledger.parts.items()):
                if state.status == "releasing" and state.stopped and not state.clean:
                    del self._ledger.parts[(flow, key)]
                    continue
                if state.status != "pending" or not state.stopped or now < state.retry_at:
                    continue
                if not leased.get(flow, False):
                    state.error = NO_LEASE
                    continue
                if state.slot not in live:
                    # A slot that never reported (Spark has fewer slots than it said) or
                    # went quiet: plan on one that answers, if any does.
                    if not live:
                        state.error = "waiting for a copy slot to report"
                        continue
                    state.slot = min(live, key=lambda slot: self._load(slot))
                due.setdefault(flow, []).append(state)
        for flow, states in due.items():
            self._plan_flow(flow, states, now)

    def _load(self, slot: int) -> int:
        return sum(1 for state in self._ledger.parts.values() if state.slot == slot)

    def _plan_flow(self, flow: str, states: list[PartitionState], now: float) -> None:
        try:
            adapters = self._adapters(flow)
            facts = adapters.facts.gather({s.key: s.remote for s in states})
            recorded = adapters.store.load() if any(s.progress is None for s in states) else {}
        except SrmError as exc:
            with self._ledger.lock:
                for state in states:
                    state.retry_later(now, str(exc))
            log.warning("%s: cannot reconcile %d partitions yet: %s", flow, len(states), exc)
            return
        for state in states:
            try:
                self._plan(adapters, state, facts[state.key], recorded.get(state.key))
            except SrmError as exc:
                with self._ledger.lock:
                    state.retry_later(self._clock(), str(exc))
                log.warning("%s: %s (retrying in %.0f s)", state.where, exc, state.backoff)

    def _plan(
        self,
        adapters: FlowAdapters,
        state: PartitionState,
        facts: PartitionFacts,
        loaded: Progress | None,
    ) -> None:
        with self._ledger.lock:
            if state.status != "pending":
                return
            if state.progress is None:
                state.progress = loaded
            progress = position(state) if state.progress is not None else None
            request = state.resume
        restart = decide_restart(
            adapters, state.key, state.remote, state.where, progress, facts, request
        )
        if isinstance(restart.decision, Halt):
            with self._ledger.lock:
                self._ledger.halt(state, restart.decision)
            return
        self._claim(adapters, state, restart.decision, facts, request, restart.syncs)

    def _claim(
        self,
        adapters: FlowAdapters,
        state: PartitionState,
        resume: Resume,
        facts: PartitionFacts,
        request: ResumeRequest | None,
        syncs: tuple[tuple[int, int], ...],
    ) -> None:
        """Record the reservation (and the syncs of verified records), then hand the plan
        out: nothing past the recorded position is sent before the claim is durable."""
        window = adapters.flow.batch_max_records
        if request is not None:
            resume_id: str | None = request.request_id
        else:
            resume_id = state.progress.resume_id if state.progress else None
        progress = resume.progress(facts, resume_id).reserved(resume.start + window)
        records = sync_records(state.key[0], state.key[1], syncs)
        if self._lease_ms(state.flow) <= 0:
            raise SrmError(NO_LEASE)
        if records:
            adapters.syncs.write(records)
        adapters.store.write([(state.key, progress)])
        if resume.verified:
            log.info(
                "%s: %d records past the recorded position are verified copies; continuing"
                " after them",
                state.where,
                resume.verified,
            )
        with self._ledger.lock:
            if resume.lost:
                self._ledger.lost(state, resume.start - resume.lost, resume.start)
            if state.status != "pending":
                return
            plan = PartitionPlan(
                state.key[0],
                state.key[1],
                self._ledger.new_plan_id(),
                state.remote,
                resume.start,
                resume.downstream,
                progress.inflight_end or resume.start,
            )
            state.resume = None
            state.running(plan, progress)
            state.last_commit = self._clock()

    def check_identities(self, now: float) -> None:
        """Send back running partitions whose source or remote topic was deleted or
        recreated: the reconcile that follows halts them with the reason."""
        running: dict[str, dict[TopicPartition, PartitionState]] = {}
        with self._ledger.lock:
            for (flow, key), state in self._ledger.parts.items():
                if state.status == "running" and state.progress is not None:
                    running.setdefault(flow, {})[key] = state
        for flow, states in running.items():
            if now < self._identity_due.get(flow, 0.0) or self._lease_ms(flow) <= 0:
                continue
            self._identity_due[flow] = now + IDENTITY_CHECK_S
            try:
                found = self._adapters(flow).facts.identities(
                    {key: state.remote for key, state in states.items()}
                )
            except SrmError as exc:
                log.warning("%s: cannot check the topics of its partitions: %s", flow, exc)
                continue
            with self._ledger.lock:
                for key, state in states.items():
                    progress = state.progress
                    if state.status != "running" or progress is None or key not in found:
                        continue
                    if identity_changed(progress, *found[key]):
                        log.error("%s: a topic was deleted or recreated; stopping it", state.where)
                        state.retry_later(now, "a topic was deleted or recreated")
                        state.backoff = 0.0
