"""Plans (each flow on its own thread): pending partitions reconciled from Kafka and
given a plan, or halted. (Running partitions are checked by
:class:`~srm_driver.copying.running_checks.RunningChecks`.)

Work follows the batch, not the partition: the facts of up to :data:`PLAN_BATCH`
partitions are read in a few requests (one ListOffsets per cluster and side, a partition
that cannot be read waits alone), and their claims (progress with the reservation, and
the syncs of verified records) are written in one write before their plans are handed
out. Reads happen outside the ledger's lock. A partition whose unit broke over another
partition, with nothing of its own in flight, restarts where its copies were acknowledged
without any of that (:func:`~srm_driver.copying.positions.exact_restart`): one timed-out
write among 15,000 partitions of a unit costs a reconcile of the few with copies in flight,
not of all of them.

Leases are held per flow: a flow this driver holds no lease for now is not reconciled;
its pending partitions wait (saying why) while other flows go on."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from srm_common.domain.progress import Halt, PartitionFacts, Progress, Resume
from srm_common.errors import SrmError

from srm_driver.copying.awaiting import Awaiting, log_waiting
from srm_driver.copying.exact_restarts import ExactRestarts
from srm_driver.copying.ledger import Ledger
from srm_driver.copying.ports import FlowAdapters
from srm_driver.copying.positions import exact_restart, plan_at, position, sync_records
from srm_driver.copying.restart import decide_restart
from srm_driver.copying.running_checks import TopicCodecs
from srm_driver.copying.slots import Slots
from srm_driver.copying.state import PartitionState, ResumeRequest

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# Partitions reconciled from one reading of their facts and claimed in one write: the
# first plans of a cold start go out after one batch, not after all 10,000 partitions.
PLAN_BATCH = 2000
NO_LEASE = (
    "no lease for this flow: this driver cannot confirm now that it may write into the"
    " target cluster (its control is unreachable, or this driver is not a member there yet)"
)

FENCED = (
    "its copy slot runs again (Spark lost the executor of the old run): waiting until the"
    " old run's lease and writes have run out"
)


class Planner:
    """See the module docstring."""

    def __init__(
        self,
        ledger: Ledger,
        adapters: Callable[[str], FlowAdapters],
        leases: tuple[Callable[[str], int], Callable[[str], float | None]],
        clock: Callable[[], float],
        slots: Slots,
        codecs: TopicCodecs,
    ) -> None:
        """``leases``: how long each flow's lease still runs (ms), and since when it has
        been held without a gap (the task source's ``lease_ms``, ``lease_held_since``)."""
        self._ledger = ledger
        self._slots = slots
        self._adapters = adapters
        self._lease_ms, held_since = leases
        self._clock = clock
        self._codecs = codecs
        self._awaiting = Awaiting(ledger, adapters)
        self._exact = ExactRestarts(ledger, adapters, held_since, clock, codecs)

    def plan_due(self, now: float, flow: str) -> None:
        """Reconcile every pending partition of ``flow`` whose last plan stopped and whose
        retry is due, :data:`PLAN_BATCH` at a time. Looks only at the flow's unsettled
        partitions (pending or being released: copying/parts.py), not the running ones."""
        due: list[PartitionState] = []
        exact: list[PartitionState] = []
        # Asked before taking the ledger's lock: a task source may take locks of its own.
        leased = self._lease_ms(flow) > 0
        held_since = self._exact.held_since(flow)
        parts = self._ledger.parts
        with self._ledger.lock:
            live = self._slots.live(now)
            waiting = self._slots.waiting(now)
            for state in parts.unsettled(flow):  # not the running or halted ones
                fenced = now < state.fenced_until
                if state.status == "releasing" and state.stopped and not state.clean:
                    if not fenced:
                        parts.remove(state)
                    continue
                if state.status != "pending" or not state.stopped or now < state.retry_at:
                    continue
                if fenced:
                    state.error = FENCED
                    continue
                if not leased:
                    state.error = NO_LEASE
                    continue
                if state.moving_to is not None:
                    # Re-balanced (copying/slots.py): its plan on the old slot stopped.
                    if state.moving_to in live:
                        parts.move(state, state.moving_to)
                    state.moving_to = None
                if state.slot not in live:
                    # A slot that has not reported yet (while the job's slots are still
                    # coming: the start-up grace), that Spark does not run (fewer cores
                    # than asked), or that went quiet: plan on one that answers, if any.
                    if not live or waiting:
                        state.error = "waiting for a copy slot to report"
                        continue
                    parts.move(state, min(live, key=lambda slot: (parts.load(slot), slot)))
                if held_since is not None and exact_restart(state, held_since) is not None:
                    exact.append(state)
                else:
                    state.innocent_plan = -1  # reconciled from now on, whatever comes
                    due.append(state)
        if exact and held_since is not None:
            due.extend(self._exact.restart(flow, exact, held_since))
        due = self._awaiting.ask(flow, due, now)
        recorded: Mapping[TopicPartition, Progress] | None = None
        for start in range(0, len(due), PLAN_BATCH):
            if start:  # a unit that broke meanwhile does not wait for the whole pass
                self._exact.sweep(flow, self._clock(), self._slots.live)
            recorded = self._plan_batch(flow, due[start : start + PLAN_BATCH], now, recorded)

    def _plan_batch(
        self,
        flow: str,
        states: list[PartitionState],
        now: float,
        recorded: Mapping[TopicPartition, Progress] | None,
    ) -> Mapping[TopicPartition, Progress] | None:
        """Reconcile ``states`` from one reading of their facts, then record every claim
        in one write (syncs, then progress) and hand the plans out. Returns the progress
        loaded from Kafka (read once per pass, if any partition needed it)."""
        try:
            adapters = self._adapters(flow)
            # Progress first, then the facts: progress only ever names source offsets that
            # existed when it was written, so facts read after it are never older than it.
            # Read the other way round, a driver paused between the two reads (or slow)
            # finds the progress another driver recorded meanwhile past the source end it
            # read before, and would halt a healthy partition as truncated.
            if recorded is None and any(s.progress is None for s in states):
                recorded = adapters.store.load()
            facts, unreadable = adapters.facts.gather({s.key: s.remote for s in states})
        except SrmError as exc:
            with self._ledger.lock:
                for state in states:
                    state.retry_later(now, str(exc))
            log.warning("%s: cannot reconcile %d partitions yet: %s", flow, len(states), exc)
            return recorded
        loaded = recorded or {}
        # A remote topic the target's broker does not know, for a partition nothing was
        # recorded of (never planned: a plan's reservation is recorded before anything is
        # sent, so nothing can have been copied): a broker still applying the topic's
        # creation (at 30,000 partitions one broker of two took 3.5 minutes; the flow's
        # listing, answered by the other, had it), not a deletion. It waits as an
        # unreadable partition does, and is reconciled once its topic is known. With
        # progress recorded, a missing remote topic halts the partition (_decide).
        for state in states:
            fact = facts.get(state.key)
            if fact is not None and _remote_not_known_yet(
                fact, state.progress or loaded.get(state.key)
            ):
                unreadable[state.key] = (
                    f"the remote topic {adapters.flow.target}:{state.remote} is not known yet"
                    " to the broker that answered (still applying its creation?)"
                )
        if unreadable:
            self._wait_for_offsets(flow, states, unreadable, now)
        claims: list[Claim] = []
        with self._ledger.lock:  # once for the batch: a report of 15,000 partitions holds
            # it about a second, and 2,000 partitions taking it in turn queued behind each
            taken = {
                s.key: _taken(s, loaded.get(s.key))
                for s in states
                if s.key in facts and s.key not in unreadable
            }
        for state in states:
            if (inputs := taken.get(state.key)) is None:
                continue
            try:
                claim = self._decide(adapters, flow, state, facts[state.key], inputs)
            except SrmError as exc:
                with self._ledger.lock:
                    state.retry_later(self._clock(), str(exc))
                log.warning("%s: %s (retrying in %.0f s)", state.where, exc, state.backoff)
                continue
            if claim is not None:
                claims.append(claim)
        if claims:
            self._codecs.find(adapters, flow, [c.state.key for c in claims], known=True)
            self._claim(adapters, flow, claims)
        return recorded

    def _wait_for_offsets(
        self,
        flow: str,
        states: list[PartitionState],
        unreadable: Mapping[TopicPartition, str],
        now: float,
    ) -> None:
        retry_at = self._awaiting.next_round(flow, now)
        with self._ledger.lock:
            for state in states:
                if state.key in unreadable:
                    # A partition just created answers NOT_LEADER until its broker
                    # has loaded it (minutes for thousands on a busy broker): that is
                    # the broker catching up, not a failure, so it is asked again at
                    # the flow's next round (copying/awaiting.py), not after a growing
                    # backoff, and only whether its offsets can be read.
                    state.retry_later(now, unreadable[state.key])
                    state.backoff = 0.0
                    state.retry_at = retry_at
                    state.awaiting = now
        log_waiting(flow, unreadable)

    def _decide(
        self,
        adapters: FlowAdapters,
        flow: str,
        state: PartitionState,
        facts: PartitionFacts,
        inputs: tuple[Progress | None, ResumeRequest | None],
    ) -> Claim | None:
        """Where ``state`` restarts (reads what it must compare), or its halt (recorded);
        None when it is halted or no longer pending. ``inputs``: see :func:`_taken`."""
        progress, request = inputs
        restart = decide_restart(
            adapters, state.key, state.remote, state.where, progress, facts, request
        )
        if isinstance(restart.decision, Halt):
            if self._lease_ms(flow) <= 0:
                # The lease ran out while this was decided (a pause, a lost control
                # path): the partition may be another driver's by now, and what was
                # read may be stale. Only a driver that may write it halts it.
                with self._ledger.lock:
                    state.retry_later(self._clock(), NO_LEASE)
                return None
            with self._ledger.lock:
                if state.status == "pending":  # (not taken over since its inputs were)
                    self._ledger.halt(state, restart.decision)
            return None
        resume = restart.decision
        if request is not None:
            resume_id: str | None = request.request_id
        else:
            resume_id = state.progress.resume_id if state.progress else None
        window = adapters.flow.batch_max_records
        claimed = resume.progress(facts, resume_id).reserved(resume.start + window)
        records = sync_records(state.key[0], state.key[1], restart.syncs)
        return Claim(state, resume, claimed, records)

    def _claim(self, adapters: FlowAdapters, flow: str, claims: list[Claim]) -> None:
        """Record every reservation (and the syncs of verified records) in one write,
        then hand the plans out: nothing past a recorded position is sent before its
        claim is durable."""
        now = self._clock()
        try:
            if self._lease_ms(flow) <= 0:
                raise SrmError(NO_LEASE)
            syncs = [record for claim in claims for record in claim.syncs]
            if syncs:
                adapters.syncs.write(syncs)
            adapters.store.write([(claim.state.key, claim.progress) for claim in claims])
        except SrmError as exc:
            with self._ledger.lock:
                for claim in claims:
                    claim.state.retry_later(now, str(exc))
            log.warning("%s: cannot record %d claims yet: %s", flow, len(claims), exc)
            return
        with self._ledger.lock:
            for claim in claims:
                self._hand_out(claim, now)

    def _hand_out(self, claim: Claim, now: float) -> None:
        state, resume = claim.state, claim.resume
        if resume.verified:
            log.info(
                "%s: %d records past the recorded position are verified copies; continuing"
                " after them",
                state.where,
                resume.verified,
            )
        if resume.lost:
            self._ledger.lost(state, resume.start - resume.lost, resume.start)
        if state.status != "pending":
            return
        plan = plan_at(
            state,
            self._ledger.new_plan_id(),
            resume.start,
            resume.downstream,
            claim.progress.inflight_end or resume.start,
            self._codecs.of(state.flow, state.key[0]),
        )
        state.resume = None
        state.running(plan, claim.progress)
        state.last_commit = now


@dataclass(frozen=True)
class Claim:
    """A partition's restart, decided and not yet recorded: the progress to write (with
    its reservation) and the offset-sync records of the verified copies it continues
    after."""

    state: PartitionState
    resume: Resume
    progress: Progress
    syncs: list[tuple[bytes, bytes]]


def _taken(
    state: PartitionState, loaded: Progress | None
) -> tuple[Progress | None, ResumeRequest | None] | None:
    """What a reconcile of ``state`` starts from: its position (its recorded progress,
    ``loaded`` from Kafka if it had none) and the operator's resume request; None when it is
    no longer pending. Call under the ledger's lock."""
    if state.status != "pending":
        return None
    if state.progress is None:
        state.progress = loaded
    return (position(state) if state.progress is not None else None), state.resume


def _remote_not_known_yet(facts: PartitionFacts, progress: Progress | None) -> bool:
    """The remote topic is missing from the answer, the source topic is there, and
    nothing of the partition was recorded: see :meth:`Planner._plan_batch`."""
    return facts.target_topic_id is None and facts.source_topic_id is not None and progress is None
