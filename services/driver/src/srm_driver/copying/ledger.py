"""The partitions a driver holds, under one lock: their states, the epochs of the slots'
units, the last errors, and the one way a failure is counted or a halt recorded."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping

from srm_common.config.model import FlowConfig
from srm_common.domain.progress import Halt

from srm_driver.copier.failures import NOT_PASSED_THROUGH
from srm_driver.copying.meter import Meter, lag_of
from srm_driver.copying.parts import Parts
from srm_driver.copying.ports import CopyEvent
from srm_driver.copying.protocol import Failure, SlotRun
from srm_driver.copying.state import Counters, PartitionState

log = logging.getLogger(__name__)

# The per-flow REST status lists at most this many halted partitions (and counts them).
HALTED_SHOWN = 100
# ... and the latest this many copy slots run again by Spark (copying/runs.py).
RERUNS_SHOWN = 10
# ... and the latest this many changes of the slots: started, lost, re-balanced onto.
SLOT_EVENTS_SHOWN = 20

TopicPartition = tuple[str, int]


class Ledger:
    """Shared by the copy service's parts; hold ``lock`` while reading or changing."""

    def __init__(
        self,
        flows: Mapping[str, FlowConfig],
        publish: Callable[[CopyEvent], None],
        *,
        settle_s: float = 1.0,
        wait_out_s: float = 11.0,
    ) -> None:
        self.lock = threading.RLock()
        # ``runs``, ``fenced_runs``, ``granted``, ``live_slots`` and ``slot_flows`` (the
        # slots' runs, fences, leases and liveness) are changed under ``fence_lock``,
        # taken after ``lock``, and under ``lock`` too but by a slot asking for its leases
        # alone (ReportDesk.keep), which takes ``fence_lock`` only: a report being recorded
        # holds ``lock`` as long as its partitions take, and must not make a slot's units
        # run out of lease. So a fence (made under both) is atomic with a lease kept
        # alive, and what keep changes (``granted``, ``live_slots``) is read under
        # ``fence_lock``.
        self.fence_lock = threading.RLock()
        self.flows = dict(flows)
        self.parts = Parts()
        # (slot, flow) -> the epoch of that unit's plans; raised after it broke.
        self.epochs: dict[tuple[int, str], int] = {}
        self.unit_errors: dict[str, str] = {}
        # flow -> partitions restarted where they were acknowledged after their unit broke
        # over another partition (copying/positions.exact_restart), not reconciled.
        self.exact_restarts: dict[str, int] = {}
        # slot -> monotonic time its last lease ends; its last report's sequence number;
        # when it last reported.
        self.granted: dict[int, float] = {}
        self.last_seq: dict[int, int] = {}
        self.live_slots: dict[int, float] = {}
        # slot -> when it first reported in this job (the start-up grace counts from the
        # first of them, copying/slots.py); the (slot, run id) of runs fenced as lost.
        self.first_seen: dict[int, float] = {}
        self.fenced_runs: set[tuple[int, str]] = set()
        # slot -> the flows its last answer named (those with partitions on it).
        self.slot_flows: dict[int, frozenset[str]] = {}
        self.slot_events: deque[dict[str, object]] = deque(maxlen=SLOT_EVENTS_SHOWN)
        # slot -> its current run (copying/runs.py); the latest runs that took a slot over,
        # as the status shows them.
        self.runs: dict[int, SlotRun] = {}
        self.reruns: deque[dict[str, object]] = deque(maxlen=RERUNS_SHOWN)
        # After a slot's last lease, how long a record it handed over may still land
        # (max.block, the write timeout and a second): a partition it ran waits that out.
        self.wait_out_s = wait_out_s
        # After a send whose fate is unknown (a unit broke with requests on the wire),
        # how long before the partition is reconciled: such a request may still land.
        self.settle_s = settle_s
        self._publish = publish
        self._next_plan = 1
        # What each partition did since the last raw metrics sample.
        self.meter = Meter()

    def answering(self) -> list[int]:
        """The slots that reported and were not lost since, in order."""
        with self.fence_lock:
            return sorted(self.live_slots)

    def clear_slots(self) -> None:
        """A new copy job: no slot, run, fence or lease of the last one counts."""
        with self.fence_lock:
            self.epochs.clear()
            self.granted.clear()
            self.last_seq.clear()
            self.runs.clear()
            self.live_slots.clear()
            self.first_seen.clear()
            self.fenced_runs.clear()
            self.slot_flows.clear()

    def of_flow(self, flow: str) -> Iterator[PartitionState]:
        return self.parts.of_flow(flow)

    def slot_event(self, event: dict[str, object]) -> None:
        """Remember a change of the slots for the status (the latest few)."""
        self.slot_events.append({**event, "at_ms": int(time.time() * 1000)})

    def reported(self, slot: int, now: float) -> None:
        """``slot`` reported (its report was taken in)."""
        with self.fence_lock:
            # (A keep may have heard from the slot after this report arrived.)
            self.live_slots[slot] = max(self.live_slots.get(slot, now), now)
        if slot not in self.first_seen:
            self.first_seen[slot] = now
            self.slot_event({"event": "reported", "slot": slot, "run": str(self.runs.get(slot))})

    def new_plan_id(self) -> int:
        plan, self._next_plan = self._next_plan, self._next_plan + 1
        return plan

    def settle(self, state: PartitionState, now: float) -> None:
        """A pending partition whose last plan had a send of unknown fate waits until
        such a send would have landed before it is reconciled."""
        if state.status == "pending" and state.uncertain:
            state.retry_at = max(state.retry_at, now + self.settle_s)

    def failed(self, state: PartitionState, failure: Failure, now: float) -> None:
        """A plan of ``state`` ended on ``failure``: count a poison record's tries (and halt
        after ``srm.poison.max.tries``), else retry after a backoff."""
        cause = (failure.error_class or "").rpartition(".")[2]
        message = f"{failure.kind}: {cause + ': ' if cause else ''}{failure.message}"
        if failure.kind == "poison" and failure.offset >= 0:
            tries = state.tries.get(failure.offset, 0) + 1
            state.tries[failure.offset] = tries
            max_tries = self.flows[state.flow].poison_max_tries
            if tries >= max_tries:
                self.halt(state, Halt("poison", _poison(state.where, failure, tries)))
                return
            message += f" (try {tries} of {max_tries})"
        state.retry_later(now, message)

    def halt(self, state: PartitionState, halt: Halt) -> None:
        """Stop ``state`` for good (until an operator resumes it) and say so."""
        state.halted(halt)
        state.resume = None
        log.error("%s", halt.reason)
        self._publish(
            CopyEvent("halted", state.flow, state.key[0], state.key[1], halt.kind, halt.reason)
        )

    def lost(self, state: PartitionState, first: int, end: int) -> None:
        """Retention deleted ``[first, end)`` of ``state``'s source before it was copied."""
        state.lost += end - first
        self.meter.lost(state, end - first)
        self._publish(
            CopyEvent(
                "lost",
                state.flow,
                state.key[0],
                state.key[1],
                first=first,
                end=end,
                text=f"retention deleted {end - first} source offsets before they were copied",
            )
        )
        log.warning(
            "%s: retention deleted %d source offsets (%d..%d) before they were copied",
            state.where,
            end - first,
            first,
            end - 1,
        )

    def counted(self, state: PartitionState, delta: Counters) -> None:
        """A report of ``state``'s plan added ``delta`` to what it copied."""
        state.totals.add(delta)
        self.meter.count(state, delta)

    def status(self, flow: str, job_id: str | None) -> dict[str, object]:
        """The flow's copying on this driver, for the per-flow REST status."""
        states = list(self.of_flow(flow))
        totals = Counters()
        by_status: dict[str, int] = {}
        for state in states:
            totals.add(state.totals)
            by_status[state.status] = by_status.get(state.status, 0) + 1
        errors = [
            f"{s.key[0]}-{s.key[1]}: {s.error}" for s in states if s.error and s.status != "halted"
        ]
        unit_error = self.unit_errors.get(flow)
        halted = [s for s in sorted(states, key=lambda s: s.key) if s.status == "halted"]
        lags = [(lag_of(s, 0)[0] or 0, s.key) for s in states]
        worst = max(lags, default=(0, ("", 0)))
        return {
            "partitions": len(states),
            "by_status": by_status,
            "records": totals.records,
            "bytes": totals.bytes,
            "dropped": totals.dropped,
            "latency_avg_ms": totals.latency_sum_ms // max(totals.records, 1),
            "latency_max_ms": totals.latency_max_ms,
            "lost_to_retention": sum(s.lost for s in states),
            "exact_restarts": self.exact_restarts.get(flow, 0),
            "halted": [
                {
                    "topic": s.key[0],
                    "partition": s.key[1],
                    "kind": s.halt.kind if s.halt else None,
                    "reason": s.halt.reason if s.halt else None,
                    "since_ms": int((s.halted_at or 0) * 1000),
                }
                for s in halted[:HALTED_SHOWN]
            ],
            "halted_count": len(halted),
            "largest_lag": (
                {"topic": worst[1][0], "partition": worst[1][1], "records": worst[0]}
                if worst[0]
                else None
            ),
            "errors": ([unit_error] if unit_error else []) + errors[:10],
            "job": job_id,
            "slot_reruns": list(self.reruns),
            # Partitions of this flow per slot that reports, and the latest slot changes.
            "slots": {str(slot): self.parts.count_of_slot(slot, flow) for slot in self.answering()},
            "slot_events": list(self.slot_events),
        }


def _poison(where: str, failure: Failure, tries: int) -> str:
    """Why a partition halts on a poison record (or a batch it cannot pass through)."""
    if failure.error_class == NOT_PASSED_THROUGH:
        return f"{where}: stopped {tries} times: {failure.message.rstrip('.')}"
    return (
        f"{where}: the record at source offset {failure.offset} could not"
        f" be written after {tries} tries: {failure.error_class or 'error'}:"
        f" {failure.message.rstrip('.')}. Fix the target (e.g. the remote"
        " topic's max.message.bytes) and resume with srm-control --from"
        f" copy-end, or skip the record with --from offset --offset"
        f" {failure.offset + 1}"
    )
