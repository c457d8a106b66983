"""What each partition did since the last raw metrics sample: the copy's cumulative
counters turned into per-interval deltas. Pure; the ledger holds one under its lock.

Slots report counters cumulative *per plan* (a new plan, a new copy job or a new driver
process starts them at 0). The report desk already takes each report in as the
difference from the last one of the same plan (:meth:`Counters.since`); it also hands
that difference to :meth:`Meter.count`, which adds it to the partition's interval. A
sample :meth:`Meter.drain` s the interval and starts the next at zero. So::

    plan 7 reports records 100, 250        -> +100, +150
    plan 7 stops; plan 9 reports 30, 80    -> +30, +50     (plan 9 counts from 0)
    the partition is released (state gone) -> its interval is kept until drained

and the sum over every drained interval is what was acknowledged on the target, no
matter how plans, jobs and owners changed in between (a copy acknowledged by a plan whose
last report never arrived, because the slot died, is the only one never counted).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from srm_driver.copying.state import Counters, PartitionState

TopicPartition = tuple[str, int]

# PartitionState.status -> the status a raw sample gives (a released partition: stopped).
STATUS = {"running": "running", "pending": "pending", "halted": "halted", "releasing": "stopped"}


@dataclass
class Interval:
    """One partition's counts since the last drain."""

    remote: str
    counters: Counters = field(default_factory=Counters)
    lost: int = 0


@dataclass(frozen=True)
class PartitionMetrics:
    """One partition of a flow over one interval, as a raw sample reports it."""

    topic: str
    partition: int
    remote: str
    counters: Counters
    lost: int
    status: str
    halt_reason: str | None
    lag_records: int | None
    lag_ms: int | None


class Meter:
    """Per (flow, partition) intervals; see the module docstring."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, TopicPartition], Interval] = {}

    def count(self, state: PartitionState, delta: Counters) -> None:
        self._interval(state).counters.add(delta)

    def lost(self, state: PartitionState, records: int) -> None:
        self._interval(state).lost += records

    def _interval(self, state: PartitionState) -> Interval:
        key = (state.flow, state.key)
        interval = self._open.get(key)
        if interval is None:
            interval = self._open[key] = Interval(state.remote)
        return interval

    def drain(
        self, flow: str, states: Iterable[PartitionState], now_ms: int
    ) -> list[PartitionMetrics]:
        """Every partition of ``flow`` held here (``states``) or counted since the last
        drain, with what it did meanwhile; its interval starts again at zero."""
        held = {state.key: state for state in states}
        return self.drain_keys(flow, self.due(flow, held), held, now_ms)

    def due(self, flow: str, held: dict[TopicPartition, PartitionState]) -> list[TopicPartition]:
        """The partitions a drain of ``flow`` covers: those ``held`` here and those
        counted since the last drain (released meanwhile), in order."""
        return sorted({*held, *(key for name, key in self._open if name == flow)})

    def drain_keys(
        self,
        flow: str,
        keys: Iterable[TopicPartition],
        held: dict[TopicPartition, PartitionState],
        now_ms: int,
    ) -> list[PartitionMetrics]:
        """Drain the intervals of ``keys`` (some of :meth:`due`, so that a caller can
        drain thousands in slices, letting its lock go in between: a partition counted
        between two slices is counted in the one that drains it, or in the next drain)."""
        out = []
        for key in keys:
            interval = self._open.pop((flow, key), None)
            state = held.get(key)
            if interval is None:
                if state is None:
                    continue
                interval = Interval(state.remote)
            lag_records, lag_ms = lag_of(state, now_ms)
            halt = state.halt if state is not None and state.status == "halted" else None
            out.append(
                PartitionMetrics(
                    topic=key[0],
                    partition=key[1],
                    remote=state.remote if state is not None else interval.remote,
                    counters=interval.counters,
                    lost=interval.lost,
                    status=STATUS.get(state.status, "stopped") if state is not None else "stopped",
                    halt_reason=halt.reason if halt is not None else None,
                    lag_records=lag_records,
                    lag_ms=lag_ms,
                )
            )
        return out


def lag_of(state: PartitionState | None, now_ms: int) -> tuple[int | None, int | None]:
    """Lag in upstream offsets (the source's end past the next one to acknowledge) and in
    time (the age of the oldest record sent and not acknowledged, or of the one waiting for
    its reservation; 0 when nothing is left; None when that record is not known yet): only
    while the partition copies here."""
    if state is None or state.status != "running" or state.source_end < 0:
        return None, None
    acked_up = state.acked[0] if state.acked is not None else state.next_send
    records = max(0, state.source_end - acked_up)
    if state.pending_ts >= 0:
        return records, max(0, now_ms - state.pending_ts)
    return records, 0 if records == 0 else None
