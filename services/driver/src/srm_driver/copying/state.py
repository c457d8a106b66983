"""What the driver knows about each partition it copies: plan, progress, counters, halts.

Pure bookkeeping, no I/O; :class:`srm_driver.copying.service.CopyService` changes it
under its lock.

A partition's life on one driver::

    owned -> pending --reconcile--> running --report: stopped/broken--> pending ...
               |  ^                    |
               |  +----- resumed ------+-- halted (reason, kind)
               +-- not owned any more: releasing -> (final progress) -> gone
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import add, lt, sub
from typing import Literal

from srm_common.domain.progress import Halt, Progress
from srm_common.domain.resume import ResumePoint
from srm_common.metrics.raw import LATENCY_BOUNDS_MS, Histogram

from srm_driver.copying.protocol import PartitionPlan, PartitionReport

TopicPartition = tuple[str, int]
Status = Literal["pending", "running", "releasing", "halted"]
# Fields whose change the holder of a state is told of (copying/parts.py): what a slot's
# next answer carries (the plan, and whether it runs) and what a report must look at
# although the slot did not list the partition (a release, a plan left out).
WATCHED_FIELDS = frozenset({"plan", "status", "omitted_since"})

MIN_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0


@dataclass
class Counters:
    """Counts of copied records: cumulative (as a slot reports them for a plan, or a
    partition's whole life) or what happened between two of those (:meth:`since`).

    ``latency`` counts copies per bucket of :data:`LATENCY_BOUNDS_MS`; ``latency_min_ms``
    is None while none was counted. Between two cumulative states the exact extremes are
    unknown unless they moved; :meth:`since` then bounds them by the histogram's buckets
    (the maximum from above, the minimum from below: never better than the truth).
    """

    records: int = 0
    bytes: int = 0
    dropped: int = 0
    latency_sum_ms: int = 0
    latency_max_ms: int = 0
    latency: Histogram = field(default_factory=Histogram)
    latency_min_ms: int | None = None

    def add(self, other: Counters) -> None:
        self.records += other.records
        self.bytes += other.bytes
        self.dropped += other.dropped
        self.latency_sum_ms += other.latency_sum_ms
        self.latency_max_ms = max(self.latency_max_ms, other.latency_max_ms)
        self.latency = Histogram(tuple(map(add, self.latency.counts, other.latency.counts)))
        if other.latency_min_ms is not None:
            low = self.latency_min_ms
            self.latency_min_ms = (
                other.latency_min_ms if low is None else min(low, other.latency_min_ms)
            )

    @classmethod
    def of(cls, report: PartitionReport) -> Counters:
        counts = report.latency_hist
        return cls(
            report.records,
            report.bytes,
            report.dropped,
            report.latency_sum_ms,
            report.latency_max_ms,
            Histogram(counts) if len(counts) == len(LATENCY_BOUNDS_MS) + 1 else Histogram(),
            None if report.latency_min_ms < 0 else report.latency_min_ms,
        )

    def since(self, before: Counters) -> Counters:
        """What happened between ``before`` and this (cumulative) state of the same plan;
        everything, when this state is below ``before`` (counting started again)."""
        now, then = self.latency.counts, before.latency.counts
        if self.records < before.records or any(map(lt, now, then)):
            before = Counters()
            then = before.latency.counts
        latency = Histogram(tuple(map(sub, now, then)))
        delta = Counters(
            self.records - before.records,
            self.bytes - before.bytes,
            self.dropped - before.dropped,
            self.latency_sum_ms - before.latency_sum_ms,
            self.latency_max_ms,
            latency,
        )
        filled = [index for index, count in enumerate(latency.counts) if count]
        if not filled:
            return delta  # no latency counted (or a slot without histograms): max as is
        top, bottom = filled[-1], filled[0]
        if before.latency.total and self.latency_max_ms <= before.latency_max_ms:
            # The plan's maximum did not move: this interval's is at most it, and at most
            # the upper bound of its highest bucket.
            if top < len(LATENCY_BOUNDS_MS):
                delta.latency_max_ms = min(self.latency_max_ms, LATENCY_BOUNDS_MS[top])
        low = self.latency_min_ms
        if low is not None and before.latency_min_ms is not None and low >= before.latency_min_ms:
            # Likewise the minimum: at least the lower bound of the lowest bucket.
            low = max(low, LATENCY_BOUNDS_MS[bottom - 1] + 1 if bottom else 0)
        delta.latency_min_ms = low
        return delta


@dataclass(frozen=True)
class ResumeRequest:
    """An operator's explicit resume of a halted partition."""

    request_id: str
    point: ResumePoint
    by: str = "unknown"


@dataclass
class PartitionState:
    """One upstream partition this driver holds for one flow."""

    flow: str
    key: TopicPartition
    remote: str
    slot: int
    status: Status = "pending"
    # The plan handed out now (None while pending), and the id of the last one handed
    # out: the slot reports on that one until it has stopped.
    plan: PartitionPlan | None = None
    last_plan: int = 0
    # The last progress written (or loaded): authoritative while this driver holds it.
    progress: Progress | None = None
    reserve: int = 0
    acked: tuple[int, int] | None = None
    next_send: int = 0
    seen: Counters = field(default_factory=Counters)
    totals: Counters = field(default_factory=Counters)
    lost: int = 0
    # From the last report: where the source ends (the slot's consumer saw it) and the
    # timestamp of the oldest record sent and not acknowledged (-1: not known, none).
    source_end: int = -1
    pending_ts: int = -1
    halt: Halt | None = None
    halted_at: float | None = None
    error: str | None = None
    tries: dict[int, int] = field(default_factory=dict)
    retry_at: float = 0.0
    backoff: float = 0.0
    # Since when (planner clock) its offsets could not be read (a remote partition the
    # target has not loaded yet): only asked whether it can be read now, with the others
    # waiting so, until it can (copying/planner.py). None: not waiting so.
    awaiting: float | None = None
    last_commit: float = 0.0
    # The slot confirmed the last plan stopped (or there was none): reconciling is safe.
    stopped: bool = True
    clean: bool = False
    # A send of the last plan ended without an acknowledgement (it may still land).
    uncertain: bool = False
    # The plan (id) during which this partition's unit broke over another partition:
    # restarted where its copies were acknowledged if all of them were
    # (positions.exact_restart), not reconciled. -1: none.
    innocent_plan: int = -1
    innocent_at: float = 0.0  # when the driver took that break in (its clock)
    # The version of the first answer that left the last plan out (see protocol.py).
    omitted_since: int | None = None
    # The slot's last entry for the last plan that this driver took in (None: none yet); a
    # report of protocol 2 leaves a partition out while its entry stays this one.
    reported: PartitionReport | None = None
    resume: ResumeRequest | None = None
    since: float = field(default_factory=time.time)
    # Not reconciled (by any slot) nor let go before this (monotonic): a run of the slot
    # it ran on was taken over and may still write until then (copying/runs.py).
    fenced_until: float = 0.0
    # Re-balancing moves it to this slot once its plan here has stopped (copying/slots.py).
    moving_to: int | None = None

    def __setattr__(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)
        if name in WATCHED_FIELDS:
            changed = self.__dict__.get("_changed")
            if changed is not None:
                changed(self)

    def watch(self, changed: Callable[[PartitionState], None] | None) -> None:
        """Call ``changed`` after every change of a :data:`WATCHED_FIELDS` field (None:
        stop): so whatever code changes a plan, the next answer knows, without a walk
        over every partition."""
        object.__setattr__(self, "_changed", changed)

    @property
    def where(self) -> str:
        source, target = self.flow.split("->")
        topic, partition = self.key
        return f"{source}:{topic}-{partition} -> {target}:{self.remote}-{partition}"

    def retry_later(self, now: float, error: str | None) -> None:
        """Pending again, after a backoff that grows while failures repeat."""
        self.status = "pending"
        self.plan = None
        self.error = error
        self.backoff = min(MAX_BACKOFF_S, max(MIN_BACKOFF_S, self.backoff * 2))
        self.retry_at = now + self.backoff

    def halted(self, halt: Halt) -> None:
        self.status = "halted"
        self.plan = None
        self.halt = halt
        self.halted_at = time.time()
        self.error = halt.reason

    def running(self, plan: PartitionPlan, progress: Progress) -> None:
        self.status = "running"
        self.plan = plan
        self.last_plan = plan.plan
        self.progress = progress
        self.reserve = plan.reserve
        self.acked = None
        self.next_send = plan.start
        self.seen = Counters()
        self.stopped = False
        self.clean = False
        self.uncertain = False
        self.omitted_since = None
        self.reported = None
        self.halt = None
        self.halted_at = None
        self.error = None
        self.backoff = 0.0
        self.awaiting = None
