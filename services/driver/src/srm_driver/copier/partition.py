"""One upstream partition under one plan: where sending stands, what was acknowledged,
and what the next report tells the driver.

A plan is the driver's decision after reconciling: start at upstream ``start``, the first
copy lands at downstream ``down`` (checked on every acknowledgement unless the remote
partition is shared), never send an upstream offset at or past ``reserve`` (the end
recorded as in flight in the progress topic).

Offset syncs come from acknowledgements, which arrive in send order per partition: the
first record of the plan, both sides of every gap (upstream, or downstream when the
partition is shared), and the last acknowledged record at every report (the rule of
``srm_common.domain.progress.offset_syncs``, checked against the same golden cases).

Not thread safe: every method is called with the unit's lock held (the copy loop thread,
where librdkafka's delivery callbacks also run, and the control thread for reports).

**Changed partitions.** A unit's report lists only the partitions whose entry changed
(copy protocol 2), and finds them without a walk over all of them: every method that
changes what :meth:`PartitionCopy.report` says puts the partition in ``changed`` (the
unit's, shared by its partitions), and so does the unit where it changes one inline (a
send). An acknowledgement (:meth:`PartitionCopy.land`, once per record copied) does not:
a partition with records in flight stays in ``changed`` until a report sees it with none
(the unit's rule, :meth:`srm_driver.copier.unit.FlowUnit.report`), so the report after
its last acknowledgement still looks at it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from typing import Any

from srm_common.metrics.raw import LATENCY_BOUNDS_MS

SENDING = "sending"
WAITING_RESERVATION = "waiting_reservation"
STOPPING = "stopping"
STOPPED = "stopped"

Failure = dict[str, Any]
"""A failure as the protocol reports it: kind, topic, partition, offset, message, class."""


class PartitionCopy:
    """See the module docstring. ``inflight`` holds, oldest first, one
    ``(upstream offset, planned downstream offset, value bytes, timestamp)`` per record
    handed to the producer and not yet settled. About 295 lines: the record and the batch
    paths share the plan's offset check, the reservation and the offset-sync rule."""

    __slots__ = (
        "topic",
        "partition",
        "plan",
        "remote",
        "start",
        "shared",
        "next_send",
        "next_down",
        "reserve",
        "state",
        "inflight",
        "prev_up",
        "prev_down",
        "last_sync_up",
        "syncs",
        "records",
        "bytes",
        "dropped",
        "latency_sum_ms",
        "latency_max_ms",
        "latency_min_ms",
        "latency_hist",
        "latency_last_ms",
        "latency_last_bucket",
        "waiting_ts",
        "source_end",
        "error",
        "uncertain",
        "established",
        "codec",
        "changed",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        plan: int,
        remote: str,
        start: int,
        down: int,
        reserve: int,
        shared: bool,
        codec: str = "",
        changed: dict[PartitionCopy, None] | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.plan = plan
        self.remote = remote
        self.start = start
        self.shared = shared
        self.next_send = start
        self.next_down = down
        self.reserve = reserve
        self.state = SENDING
        self.inflight: deque[tuple[int, int, int, int]] = deque()
        self.prev_up = -1
        self.prev_down = down - 1
        self.last_sync_up = -1
        self.syncs: list[tuple[int, int]] = []
        self.records = 0
        self.bytes = 0
        self.dropped = 0
        self.latency_sum_ms = 0
        self.latency_max_ms = 0
        self.latency_min_ms = -1
        self.latency_hist = [0] * (len(LATENCY_BOUNDS_MS) + 1)
        # The last latency counted and its bucket (min and max already include it).
        self.latency_last_ms = -1
        self.latency_last_bucket = 0
        # The record the partition waits at for its reservation (-1: none or no timestamp).
        self.waiting_ts = -1
        # The source partition's end as the consumer last saw it; -1 unknown.
        self.source_end = -1
        self.error: Failure | None = None
        # A send of this plan ended without an acknowledgement: it may still land.
        self.uncertain = False
        # The unit's current producer has had a copy acknowledged here (see the unit).
        self.established = False
        # The codec its copies are compressed with (the producer they go to).
        self.codec = codec
        # The unit's partitions whose report entry may have changed (see the docstring);
        # a new partition is one.
        self.changed: dict[PartitionCopy, None] = {} if changed is None else changed
        self.changed[self] = None

    def change_codec(self, codec: str) -> None:
        """Send to the producer of ``codec`` from now on: once nothing is in flight to
        the current one (called again at the next plan until then). That producer is new
        to this partition, so its first copy is acknowledged before more go there."""
        if codec != self.codec and not self.inflight:
            self.codec = codec
            self.established = False

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def outstanding(self) -> int:
        return len(self.inflight)

    def extend_reserve(self, value: int) -> None:
        if value > self.reserve:
            self.reserve = value

    def await_reservation(self, timestamp: int = -1) -> None:
        """Stop at ``next_send`` (a record of ``timestamp``) until the reservation moves."""
        if self.state == SENDING:
            self.state = WAITING_RESERVATION
            self.waiting_ts = timestamp
            self.changed[self] = None

    def maybe_resume(self) -> bool:
        """Back to sending once the reservation moved past the next offset to send."""
        if self.state == WAITING_RESERVATION and self.reserve > self.next_send:
            self.state = SENDING
            self.waiting_ts = -1
            self.changed[self] = None
            return True
        return False

    def stop(self, why: Failure | None = None) -> None:
        """Send nothing more; ``why`` is reported as this partition's error."""
        if why is not None and self.error is None:
            self.error = why
            self.changed[self] = None
        if self.state != STOPPED:
            self.state = STOPPED if not self.inflight else STOPPING
            self.changed[self] = None

    @property
    def stopped(self) -> bool:
        return self.state == STOPPED

    def sent(self, up: int, size: int, timestamp: int) -> None:
        """Upstream ``up`` (``size`` value bytes, ``timestamp`` or -1) was handed to the
        producer, planned at ``next_down``."""
        self.inflight.append((up, self.next_down, size, timestamp))
        self.next_send = up + 1
        self.next_down += 1
        self.changed[self] = None

    def dropped_one(self, up: int) -> None:
        """Upstream ``up`` is not copied (the origin rule dropped it)."""
        self.dropped += 1
        self.next_send = up + 1
        self.changed[self] = None

    def land(self, offset: int | None, now_ms: int) -> bool:
        """The oldest record in flight landed at downstream ``offset`` (None: the broker had
        it already, a retry of one that landed, so it is where it was planned), its
        acknowledgement served at ``now_ms``: count it and its offset syncs, True. False,
        with nothing changed, when it is not where the plan says (unless the partition is
        shared) or a shared partition's copy landed where no sync can say: the unit's
        failure (:meth:`failed`).

        This runs for every record copied: the latency of a run of copies with the same
        timestamp, served by one poll, is bucketed once."""
        up, down, size, ts = self.inflight[0]
        if offset is None:
            if self.shared:
                return False
        elif offset != down:
            if not self.shared:
                return False
            down = offset
        self.inflight.popleft()
        prev_up = self.prev_up
        if up != prev_up + 1 or prev_up < 0 or (self.shared and down != self.prev_down + 1):
            # The first copy of the plan, or both sides of a gap.
            if prev_up >= 0 and self.last_sync_up != prev_up:
                self.syncs.append((prev_up, self.prev_down))
            self.syncs.append((up, down))
            self.last_sync_up = up
        self.prev_up = up
        self.prev_down = down
        self.records += 1
        self.bytes += size
        if ts >= 0:
            # A timestamp ahead of this clock (skew) counts as no latency, not as none.
            latency = now_ms - ts if now_ms > ts else 0
            if latency != self.latency_last_ms:
                self.latency_last_ms = latency
                self.latency_last_bucket = bisect_left(LATENCY_BOUNDS_MS, latency)
                if latency > self.latency_max_ms:
                    self.latency_max_ms = latency
                if self.latency_min_ms < 0 or latency < self.latency_min_ms:
                    self.latency_min_ms = latency
            self.latency_sum_ms += latency
            self.latency_hist[self.latency_last_bucket] += 1
        if self.state == STOPPING and not self.inflight:
            self.state = STOPPED
        return True

    def sent_batch(self, first: int, last: int, count: int, size: int, timestamp: int) -> None:
        """A whole batch of upstream ``first``..``last`` (``count`` records, contiguous
        offsets; ``size`` bytes; its newest ``timestamp``) was sent, planned at
        ``next_down``: one entry in flight (:meth:`land_batch`)."""
        self.inflight.append((first, self.next_down, size, timestamp))
        self.next_send = last + 1
        self.next_down += count
        self.changed[self] = None

    def land_batch(self, offset: int, count: int, now_ms: int) -> bool:
        """The oldest batch in flight (:meth:`sent_batch`, ``count`` records) landed at
        downstream ``offset``: count its records and the offset syncs of its boundary
        (its first record after a gap; the records inside map one to one), True. False,
        with nothing changed, when it is not where the plan says: the unit's failure.
        Every record of the batch counts the latency of the batch's newest timestamp."""
        up, down, size, ts = self.inflight[0]
        if offset != down:
            return False
        self.inflight.popleft()
        prev_up = self.prev_up
        if up != prev_up + 1 or prev_up < 0:
            if prev_up >= 0 and self.last_sync_up != prev_up:
                self.syncs.append((prev_up, self.prev_down))
            self.syncs.append((up, down))
            self.last_sync_up = up
        self.prev_up = up + count - 1
        self.prev_down = down + count - 1
        self.records += count
        self.bytes += size
        if ts >= 0:
            latency = now_ms - ts if now_ms > ts else 0
            self.latency_max_ms = max(self.latency_max_ms, latency)
            if self.latency_min_ms < 0 or latency < self.latency_min_ms:
                self.latency_min_ms = latency
            self.latency_sum_ms += latency * count
            self.latency_hist[bisect_left(LATENCY_BOUNDS_MS, latency)] += count
        if self.state == STOPPING and not self.inflight:
            self.state = STOPPED
        return True

    def failed(self) -> None:
        """The oldest record in flight did not land (or its fate is unknown): the plan is
        over."""
        if self.inflight:
            self.inflight.popleft()
        self.uncertain = True
        self.changed[self] = None
        if self.state == STOPPING and not self.inflight:
            self.state = STOPPED

    def abandon(self) -> None:
        """Every record still in flight is of unknown fate (its producer is gone)."""
        while self.inflight:
            self.failed()

    def report(self, boundary: bool) -> dict[str, Any]:
        """The report entry; ``boundary`` adds a sync for the last acknowledged record."""
        if boundary and self.prev_up >= 0 and self.last_sync_up != self.prev_up:
            self.syncs.append((self.prev_up, self.prev_down))
            self.last_sync_up = self.prev_up
        acked_up = self.prev_up + 1 if self.prev_up >= 0 else self.start
        if self.inflight:
            pending_ts = self.inflight[0][3]
        else:
            pending_ts = self.waiting_ts if self.state == WAITING_RESERVATION else -1
        return {
            "topic": self.topic,
            "partition": self.partition,
            "plan": self.plan,
            "state": self.state,
            "acked_up": acked_up,
            "acked_down": self.prev_down + 1,
            "next_send": self.next_send,
            "outstanding": len(self.inflight),
            "records": self.records,
            "bytes": self.bytes,
            "dropped": self.dropped,
            "latency_sum_ms": self.latency_sum_ms,
            "latency_max_ms": self.latency_max_ms,
            "latency_min_ms": self.latency_min_ms,
            "latency_hist": list(self.latency_hist),
            "source_end": self.source_end,
            "pending_ts": pending_ts,
            "syncs": [list(pair) for pair in self.syncs],
            "error": self.error,
            "uncertain": self.uncertain,
        }

    def confirm_syncs(self, count: int) -> None:
        """The driver has the first ``count`` syncs (they were in a report it answered)."""
        del self.syncs[:count]
