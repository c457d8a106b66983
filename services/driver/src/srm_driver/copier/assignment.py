"""The partitions one flow unit holds: which there are under which plan, what its
consumer is assigned and reads (their source ends, in turn), and what the driver has of
them (the report entries it took in, the stops it saw).

A plan from the driver is applied here (:meth:`Assignment.apply`): a partition whose plan
is unchanged keeps running (its reservation may move on, its codec change); one whose
plan changed or that the plan leaves out is stopped, and forgotten once nothing it sent
is outstanding (and, when left out, once the driver has seen it stopped); a new one is
added. The consumer is told only what changed (``incremental_assign`` and
``incremental_unassign``: a whole ``assign()`` of 2,500 partitions cost ~0.3 s of CPU
and fetched them all again), unless it must be assigned again whole (a new consumer, or
a change librdkafka refused).

Reports follow what changed (copy protocol 2): :meth:`Assignment.entries` builds the
entries of the partitions in ``changed`` only (copier/partition.py says who puts them
there), unless the report is full. Not thread safe: called with the unit's lock held.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from srm_driver.copier.partition import SENDING, STOPPED, PartitionCopy
from srm_driver.copier.plan import UnitPlan

log = logging.getLogger(__name__)

Key = tuple[str, int]
PlanKey = tuple[str, int, int]
_ENDS_EVERY_NS = 100_000_000
# Partitions whose source end is read per look (each read finds its topic by name in
# librdkafka: ~15 us here); a slot of 2,500 partitions sees each end every 2.5 s.
_ENDS_PER_LOOK = 100


class Assignment:
    """See the module docstring. ``parts`` and ``by_remote`` (by remote partition, for
    acknowledgements) are read by the copy loop directly."""

    def __init__(self, flow: str) -> None:
        self.flow = flow
        self.parts: dict[Key, PartitionCopy] = {}
        self.by_remote: dict[Key, PartitionCopy] = {}
        # Partitions whose report entry may differ from the one the driver took in.
        self.changed: dict[PartitionCopy, None] = {}
        # The last entry of each partition plan the driver took in (the control thread),
        # and the partition plans it saw stopped.
        self._taken: dict[PlanKey, dict[str, Any]] = {}
        self._confirmed_stopped: set[PlanKey] = set()
        self.ends_seen_ns = 0
        # The partitions in the order their ends are read, and where the next look starts
        # (None: rebuilt after the partitions changed).
        self._ends_order: list[PartitionCopy] | None = None
        self._ends_next = 0

    def stop_one(self, consumer: Consumer, key: Key, why: dict[str, Any]) -> None:
        """Stop partition ``key`` alone with ``why`` (a poison record, an offset out of
        range), its fetches paused; the driver re-plans or halts it."""
        consumer.pause([TopicPartition(key[0], key[1])])
        p = self.parts.get(key)
        if p is not None:
            p.stop(why)

    def all_stopped(self) -> bool:
        return all(p.state == STOPPED for p in self.parts.values())

    def sending(self) -> bool:
        return any(p.state == SENDING for p in self.parts.values())

    # -- plans ----------------------------------------------------------------------------

    def apply(self, plan: UnitPlan, consumer: Consumer, reassign: bool) -> bool:
        """Start, restart, stop partitions as ``plan`` says; move reservations on; assign
        the consumer what changed (all of it when ``reassign``). True when something is
        left to finish (a partition taken away still sending, or not yet seen stopped by
        the driver, or a codec change waiting for copies in flight)."""
        unsettled = False
        added: list[PartitionCopy] = []
        removed: list[TopicPartition] = []
        for key, p in list(self.parts.items()):
            wanted = plan.partitions.get(key)
            if wanted is not None and wanted.plan == p.plan:
                p.extend_reserve(wanted.reserve)
                p.change_codec(wanted.codec)
                if p.codec != wanted.codec:
                    unsettled = True  # copies in flight to the old codec: tried again
                if p.maybe_resume():
                    try:
                        consumer.seek(TopicPartition(key[0], key[1], p.next_send))
                        consumer.resume([TopicPartition(key[0], key[1])])
                    except KafkaException:
                        reassign = True  # assigned again below, at next_send
                continue
            p.stop()
            if not p.stopped:
                unsettled = True
                continue  # sends of the old plan still pending
            plan_key = (key[0], key[1], p.plan)
            if wanted is None and plan_key not in self._confirmed_stopped:
                unsettled = True
                continue  # the driver has not yet seen it stopped
            del self.parts[key]
            self.by_remote.pop((p.remote, key[1]), None)
            self._confirmed_stopped.discard(plan_key)
            self._taken.pop(plan_key, None)
            self.changed.pop(p, None)
            removed.append(TopicPartition(key[0], key[1]))
        for key, w in plan.partitions.items():
            if key in self.parts:
                continue
            p = PartitionCopy(key[0], key[1], w.plan, w.remote, w.start, w.down, w.reserve,
                              plan.shared, w.codec, self.changed)  # fmt: skip
            self.parts[key] = p
            self.by_remote[(w.remote, key[1])] = p
            added.append(p)
        if added or removed:
            self._ends_order = None
        if not reassign and (added or removed):
            reassign = not self._assign_changes(consumer, added, removed)
        if reassign:
            live = [p for p in self.parts.values() if not p.stopped]
            # At the next record to send: what the consumer fetched past it is fetched again.
            consumer.assign([TopicPartition(p.topic, p.partition, p.next_send) for p in live])
            _pause_as_they_are(consumer, live)
        return unsettled

    def _assign_changes(
        self, consumer: Consumer, added: list[PartitionCopy], removed: list[TopicPartition]
    ) -> bool:
        """Take ``removed`` out of the consumer's assignment and add ``added`` at their
        next record to send (the other partitions keep their fetch positions); False if
        librdkafka refused (then everything is assigned again, as after a new consumer)."""
        try:
            if removed:
                consumer.incremental_unassign(removed)
            if added:
                consumer.incremental_assign(
                    [TopicPartition(p.topic, p.partition, p.next_send) for p in added]
                )
                _pause_as_they_are(consumer, added)
        except KafkaException as exc:
            log.info("%s: assigning the partitions again whole: %s", self.flow, exc)
            return False
        return True

    def see_ends(self, consumer: Consumer) -> None:
        """Where the partitions' sources end, as the consumer's fetches said (no request),
        reported for the lag: at most every 100 ms, :data:`_ENDS_PER_LOOK` partitions in
        turn (reading all 2,500 of a slot took ~38 ms, ten times a second)."""
        now = time.monotonic_ns()
        if now - self.ends_seen_ns < _ENDS_EVERY_NS:
            return
        self.ends_seen_ns = now
        order = self._ends_order
        if order is None:  # the partitions changed; the turn goes on where it was
            order = self._ends_order = list(self.parts.values())
        turn = order
        if len(order) > _ENDS_PER_LOOK:
            start = self._ends_next % len(order)
            turn = order[start : start + _ENDS_PER_LOOK]
            turn += order[: _ENDS_PER_LOOK - len(turn)]  # round to the first ones
            self._ends_next = start + _ENDS_PER_LOOK
        for p in turn:
            if p.state == STOPPED:
                continue
            try:
                _, high = consumer.get_watermark_offsets(
                    TopicPartition(p.topic, p.partition), cached=True
                )
            except KafkaException:
                continue
            if high >= 0 and high != p.source_end:
                p.source_end = high
                self.changed[p] = None

    # -- what the driver has (the control thread) -------------------------------------------

    def entries(
        self,
        counts: dict[PlanKey, int],
        stopped: set[PlanKey],
        sent: dict[PlanKey, dict[str, Any]] | None,
        *,
        full: bool,
    ) -> list[dict[str, Any]]:
        """The report entries of every partition when ``full``, else of those whose entry
        differs from the last one the driver took in, or that carry syncs; ``counts``,
        ``stopped`` and ``sent`` as :meth:`srm_driver.copier.unit.FlowUnit.report` says.

        A delta looks only at the partitions that changed, so a report of thousands of
        idle partitions costs what changed. One stays among them until a report finds the
        driver has its entry and nothing in flight that could change it unseen (an
        acknowledgement does not mark it)."""
        items = []
        parts = self.parts
        if full:
            visit = list(parts.values())
        else:
            visit = []
            for p in list(self.changed):
                if parts.get((p.topic, p.partition)) is p:
                    visit.append(p)
                else:
                    del self.changed[p]  # gone from the unit
        for p in visit:
            item = p.report(True)
            plan_key = (p.topic, p.partition, p.plan)
            if not full and not item["syncs"] and self._taken.get(plan_key) == item:
                if not p.inflight:
                    del self.changed[p]  # the driver has it; nothing changes it unseen
                continue  # the driver has this already
            counts[plan_key] = len(item["syncs"])
            if item["state"] == STOPPED:
                stopped.add(plan_key)
            if sent is not None:
                sent[plan_key] = {**item, "syncs": []}
            items.append(item)
        return items

    def confirm(
        self,
        counts: dict[PlanKey, int],
        stopped: set[PlanKey],
        sent: dict[PlanKey, dict[str, Any]] | None,
    ) -> None:
        """The driver took in a report: drop the syncs it had, remember the stops it saw
        and the entries it has (a later delta leaves them out while they stay the same)."""
        parts = self.parts
        for (topic, partition, plan), count in counts.items():
            p = parts.get((topic, partition))
            if count and p is not None and p.plan == plan:
                p.confirm_syncs(count)
        self._confirmed_stopped |= stopped
        for plan_key, item in (sent or {}).items():
            p = parts.get(plan_key[:2])
            if p is not None and p.plan == plan_key[2]:  # (not taken away meanwhile)
                self._taken[plan_key] = item


def _pause_as_they_are(consumer: Consumer, parts: list[PartitionCopy]) -> None:
    """Pause the partitions of ``parts`` that do not send, resume the others: a pause
    outlives assign() in librdkafka (a partition assigned again may still be paused)."""
    paused = [TopicPartition(p.topic, p.partition) for p in parts if p.state != SENDING]
    sending = [TopicPartition(p.topic, p.partition) for p in parts if p.state == SENDING]
    if paused:
        consumer.pause(paused)
    if sending:
        consumer.resume(sending)
