"""Elastic copy slots: which slots answer, a start-up grace, slots lost, and partitions
spread over the slots that answer.

The copy job's slots are not fixed: Spark may run fewer than asked (cores still coming),
the driver starts more when executors are added (:meth:`srm_driver.copying.job.CopyJob.grow`),
and an executor may be lost or removed with slots on it. So where partitions run follows
the slots that *report*:

* **start-up grace**: a partition placed on a slot that has not reported yet waits for it
  while the slots the job asked for are still coming, at most ``grace_s`` after the first
  slot reported; then it is planned on a slot that answers. So partitions are spread over
  the slots that start together instead of all going to the first one;
* **a slot lost**: one whose executor Spark has removed (:meth:`Slots.executors`: the
  driver asks Spark for its executors every second; a killed executor is gone from that
  list within about a second), or, for what Spark does not see (a Python worker paused
  or cut off while its executor lives on, a cluster manager that names no executor),
  one silent for :data:`SLOT_LOST_S`, is fenced as a re-run fences its old run
  (``copying/runs.py``): its run is answered 410 from now on (if it wakes it stops and
  ends), and its partitions are reconciled on the other slots once its last lease and
  the writes it handed over have run out. Spark's word is not taken as proof that the
  run is dead: the fence is the same either way (``docs/design.md`` section 3d). The
  other slots copy on meanwhile;
* **re-balancing**: while the partitions held by the answering slots differ by more than
  one, partitions move from the fullest slot to the emptiest, at most :data:`MOVE_BATCH`
  per pass. A running partition moves through the hand-over a restart uses: its plan is
  withdrawn, the old slot reports it stopped (nothing it sent is outstanding), and the
  planner reconciles it from Kafka, verifying what was written, on the new slot. Nothing
  else stops.

A pause of the driver itself (every slot looks silent when it wakes) is not a loss: a gap
between two passes longer than :data:`DRIVER_GAP_S` gives every slot a fresh window.
Pure bookkeeping under the ledger's lock; the runtime thread calls :meth:`Slots.check`.
"""

from __future__ import annotations

import logging

from srm_driver.copying.ledger import Ledger
from srm_driver.copying.runs import fence
from srm_driver.copying.state import PartitionState

log = logging.getLogger(__name__)

# A slot that has not reported for this long is not given new plans; one silent for
# SLOT_LOST_S is lost (it reports every 200 ms).
SLOT_SILENT_S = 5.0
SLOT_LOST_S = 15.0
# Passes of the driver further apart than this: the driver itself was paused or starved.
DRIVER_GAP_S = 5.0
# Partitions moved to another slot per pass at most (each is stopped and reconciled).
MOVE_BATCH = 1000
# How often the partitions per slot are compared; they are walked only when the counts
# differ by more than one (so 100,000 partitions held cost nothing while balanced).
REBALANCE_EVERY_S = 1.0
START_GRACE_S = 5.0


class Slots:
    """See the module docstring; call under the ledger's lock."""

    def __init__(self, ledger: Ledger, grace_s: float = START_GRACE_S) -> None:
        self._ledger = ledger
        self.grace_s = grace_s
        # The slots the job asked Spark for and that have not been lost.
        self._expected: set[int] = set()
        self._last_check: float | None = None
        self._rebalance_at = 0.0
        # Executor ids Spark has listed as running in this job: one of them missing from
        # a later list was removed (Spark never reuses an executor id in an application).
        self._executors_seen: set[str] = set()

    def started(self, slots: range | list[int]) -> None:
        """A new copy job asks for ``slots``."""
        self._expected = set(slots)
        self._last_check = None
        self._executors_seen = set()

    def added(self, slots: list[int]) -> None:
        """The job asked Spark for more slots (executors were added)."""
        self._expected.update(slots)
        if slots:
            self._ledger.slot_event({"event": "started", "slots": list(slots)})

    def live(self, now: float) -> list[int]:
        """Slots that reported within :data:`SLOT_SILENT_S`."""
        with self._ledger.fence_lock:
            live = list(self._ledger.live_slots.items())
        return [slot for slot, seen in live if now - seen < SLOT_SILENT_S]

    def waiting(self, now: float) -> bool:
        """Whether a partition placed on a slot that has not reported yet should wait for
        it (the start-up grace)."""
        first = self._ledger.first_seen
        if not first or self._expected <= first.keys():
            return not first
        return now - min(first.values()) < self.grace_s

    def place(self, now: float, count: int) -> int:
        """The slot a new partition goes to: the least loaded of those that answer, else
        of the ``count`` the job started with."""
        parts = self._ledger.parts
        live = self.live(now)
        if live:
            return min(live, key=lambda slot: (parts.load(slot), slot))
        return parts.least_loaded(count)

    def check(self, now: float, *, stopping: bool) -> None:
        """Find lost slots and re-balance (the runtime thread, about every pass)."""
        ledger = self._ledger
        last, self._last_check = self._last_check, now
        with ledger.fence_lock:
            if last is not None and now - last > DRIVER_GAP_S:
                # This driver was paused (or starved): its slots' silence says nothing.
                for slot in ledger.live_slots:
                    ledger.live_slots[slot] = max(ledger.live_slots[slot], now)
                return
            for slot, seen in list(ledger.live_slots.items()):
                if now - seen >= SLOT_LOST_S:
                    self._lost(slot, now)
        if stopping or now < self._rebalance_at or self.waiting(now):
            return
        self._rebalance_at = now + REBALANCE_EVERY_S
        loads = [self._ledger.parts.load(slot) for slot in self.live(now)]
        if len(loads) > 1 and max(loads) - min(loads) > 1:
            self._rebalance(now)

    def executors(self, running: frozenset[str], now: float) -> None:
        """Spark's executors now (``running``, asked just before): a slot whose run names
        an executor Spark listed before and lists no more is lost at once."""
        removed = self._executors_seen - running
        self._executors_seen |= running
        if not removed:
            return
        with self._ledger.fence_lock:
            for slot in list(self._ledger.live_slots):
                run = self._ledger.runs.get(slot)
                if run is not None and run.executor_id in removed:
                    self._lost(slot, now, f"Spark removed executor {run.executor_id}")

    def _lost(self, slot: int, now: float, why: str | None = None) -> None:
        """Fence ``slot``'s run; call under the ledger's lock and its fence lock (a lease
        kept alive in between would outlast the fence)."""
        ledger = self._ledger
        del ledger.live_slots[slot]
        self._expected.discard(slot)
        run = ledger.runs.get(slot)
        if run is not None:
            ledger.fenced_runs.add((slot, run.id))
        why = why or f"silent for {SLOT_LOST_S:.0f} s"
        held, until = fence(ledger, slot, now, f"copy slot {slot} is lost ({why})")
        ledger.slot_event(
            {
                "event": "lost",
                "slot": slot,
                "executor": run.executor if run is not None else None,
                "why": why,
                "partitions": held,
                "fenced_s": round(until - now, 1),
            }
        )
        log.warning(
            "copy slot %d (%s) is lost (%s); its %d partitions move to the other slots in"
            " %.1f s, once its lease and writes have run out",
            slot,
            run if run is not None else "no run",
            why,
            held,
            until - now,
        )

    def _rebalance(self, now: float) -> None:
        """Move partitions from the fullest answering slot to the emptiest while they
        differ by more than one."""
        parts = self._ledger.parts
        live = self.live(now)
        if len(live) < 2:
            return
        loads = {slot: 0 for slot in live}
        movable: dict[int, list[PartitionState]] = {}
        for slot in live:
            for state in parts.of_slot(slot):
                if state.status == "halted":
                    continue
                target = state.moving_to if state.moving_to in loads else slot
                loads[target] += 1
                if state.moving_to is None and state.status in ("pending", "running"):
                    movable.setdefault(slot, []).append(state)
        moved: dict[int, int] = {}
        for _ in range(MOVE_BATCH):
            full = max(live, key=lambda slot: (loads[slot], -slot))
            empty = min(live, key=lambda slot: (loads[slot], slot))
            if loads[full] - loads[empty] < 2 or not movable.get(full):
                break
            state = movable[full].pop()
            self._move(state, empty, now)
            loads[full] -= 1
            loads[empty] += 1
            moved[empty] = moved.get(empty, 0) + 1
        for slot, count in moved.items():
            self._ledger.slot_event({"event": "rebalanced", "slot": slot, "partitions": count})
            log.info("copy slot %d: %d partitions move to it (re-balancing)", slot, count)

    def _move(self, state: PartitionState, slot: int, now: float) -> None:
        if state.status == "pending" and state.stopped:
            self._ledger.parts.move(state, slot)
            return
        state.moving_to = slot
        if state.status == "running":
            state.retry_later(now, None)
            state.backoff = 0.0
