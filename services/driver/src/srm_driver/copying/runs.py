"""Runs of a copy slot: which one is current, and how a new one takes the slot over.

Spark runs a slot's task again, as a new task attempt on another executor, when it lost
the executor the slot ran on (a worker killed, a machine gone; it does not count that as
the task's failure). The old run may be dead or only cut off: an executor that is paused,
or that lost its network, may still hold a lease and have records in its producer. So a
new run of a slot is handled as a restart of that slot's partitions, with the old run
fenced out:

* **the old run can no longer be given anything**: its reports are answered 410 (the
  job is over for it), so if it is alive it revokes its leases, stops and ends;
* **nothing of the old run lands after the new run starts on a partition**: every
  partition the slot held is stopped here (not cleanly: the old run's last positions
  are unknown) and may not be reconciled, by any slot, nor let go to another driver,
  before the last lease given to the slot has run out and a record handed over before
  that has landed or timed out: the lease's end plus 2 %, then ``Ledger.wait_out_s``
  (``max.block.ms``, the write timeout and a second), as the leader waits out a driver.
  The lease, not a producer epoch, is the fence, as everywhere in the copy
  (``docs/design.md`` section 1: transactional producers would leave aborted copies
  that ``read_uncommitted`` consumers see);
* **the new run gets the partitions back through the restart's verification**: they are
  pending, and the planner reconciles them from the last recorded progress, checking the
  records past it on the target (verified copies are kept, the rest is copied again).

Which run is newer is Spark's task attempt number: a run with a higher attempt than the
slot's current one takes over; a report of any other run (a lower attempt, or the same
attempt with another id) is one of a run already taken over or never admitted, and is
answered 410. A slot of an older version names no run: all its reports are run ``""``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from srm_driver.copying.ledger import Ledger
from srm_driver.copying.protocol import SlotRun

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rerun:
    """A slot taken over by a new run: for the status and the log."""

    slot: int
    old: SlotRun
    new: SlotRun
    at_ms: int
    partitions: int
    fenced_s: float

    def to_json(self) -> dict[str, object]:
        return {
            "slot": self.slot,
            "attempt": self.new.attempt,
            "executor": self.new.executor,
            "previous_attempt": self.old.attempt,
            "previous_executor": self.old.executor,
            "at_ms": self.at_ms,
            "partitions": self.partitions,
            "fenced_s": round(self.fenced_s, 1),
        }


def admit(current: SlotRun | None, run: SlotRun) -> str:
    """``current`` (the report's run is the slot's current one, or the slot has none
    yet), ``newer`` (it takes the slot over) or ``superseded`` (answer 410)."""
    if current is None or run.id == current.id:
        return "current"
    if run.attempt > current.attempt:
        return "newer"
    return "superseded"


def fence(ledger: Ledger, slot: int, now: float, why: str) -> tuple[int, float]:
    """Stop every partition ``slot`` holds and keep it from being reconciled, by any slot,
    before the slot's last lease and the writes it handed over have run out: how many it
    held, and until when (monotonic). Call under the ledger's lock and its fence lock."""
    granted = ledger.granted.get(slot)
    # (2 % of the lease left for the rates of two monotonic clocks, as the leader does.)
    until = now if granted is None else max(now, granted * 1.02 - now * 0.02 + ledger.wait_out_s)
    held = 0
    for state in ledger.parts.of_slot(slot):
        held += 1
        state.fenced_until = max(state.fenced_until, until)
        state.innocent_plan = -1  # reconciled, never restarted where last acknowledged
        if state.status == "running":
            state.retry_later(now, f"{why}; waiting out its old run")
            state.backoff = 0.0
        if not state.stopped:
            # What the old run sent last is unknown: reconciled (verified) from the
            # last record, after the wait-out.
            state.stopped, state.clean = True, False
    return held, until


def take_over(ledger: Ledger, slot: int, run: SlotRun, now: float, wall_ms: int) -> Rerun:
    """``run`` replaces the slot's current run: fence the old one (see the module
    docstring). Call under the ledger's lock and its fence lock."""
    old = ledger.runs.get(slot, SlotRun())
    held, until = fence(ledger, slot, now, f"copy slot {slot} runs again")
    ledger.runs[slot] = run
    ledger.last_seq.pop(slot, None)
    rerun = Rerun(slot, old, run, wall_ms, held, until - now)
    ledger.reruns.append(rerun.to_json())
    log.warning(
        "copy slot %d re-run (%s) after its run (%s) was lost: its %d partitions are"
        " reconciled on the new run in %.1f s, once the old run's lease and writes have"
        " run out",
        slot,
        run,
        old,
        held,
        until - now,
    )
    return rerun
