"""One flow's copy loop in one slot: a consumer of the source, a producer to the target,
and the partitions the driver planned here. Records never leave this process.

Rules that keep the copy exactly once (docs/driver.md):

* the producer (one per codec the partitions' sources use, treated as one:
  :mod:`~srm_driver.copier.producers`) is idempotent (up to 5 requests in flight, kept in
  order) with librdkafka's gap-less guarantee, lingers 1 ms (its delivery timeout counts
  from ``produce()``, so the fence's bound is unchanged: :mod:`~srm_driver.copier.clients`);
  nothing is handed to it
  without a valid :class:`~srm_driver.copier.lease.Lease` or past a partition's
  reservation;
* the first copy a new producer sends to a partition is acknowledged before it sends more
  there (:meth:`FlowUnit._establish`);
* every acknowledged offset must be the planned one (unless the target is shared); a
  different one means another writer: the unit breaks;
* the first failed send breaks the unit: whatever the producer still holds is purged (a
  gap-causing failure already stopped it: the gap-less guarantee makes it fatal), so
  nothing queued behind the failure lands after a hole, and every partition of the unit
  waits for a new plan (a higher epoch) made after the driver reconciled it;
* a partition-level problem (a malformed origin header, an offset out of range) stops
  that partition only; the driver re-plans or halts it.

Threads: the loop runs on a thread of its own; librdkafka's delivery reports run inside
its ``producer.poll()`` calls, on the same thread. The control thread reads reports and
confirms them. Everything the two share is guarded by ``lock``, which the loop never
holds while it blocks (only ``consumer.poll()`` and sleeps block), nor for long while it
waits for acknowledgements (``FlowUnit._establish`` lets it go between polls).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from srm_common.domain.origin import DROP, STAMP, MalformedOrigin, decide

from srm_driver.copier import clients
from srm_driver.copier.failures import failure, fatal_kind, kind_of
from srm_driver.copier.lease import Lease
from srm_driver.copier.partition import SENDING, STOPPED, Failure, PartitionCopy
from srm_driver.copier.plan import UnitPlan
from srm_driver.copier.producers import Producers

log = logging.getLogger(__name__)

Key = tuple[str, int]
PlanKey = tuple[str, int, int]
_PURGED = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})
_OUT_OF_RANGE = frozenset({KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE})
# While records are in flight, the loop waits at most this long for source records, so
# their acknowledgements (served by producer.poll on this thread) are counted promptly.
_ACK_WAIT_S = 0.002
_CLOSE_WAIT_S = 60.0
# While first copies are acknowledged, the lock is let go this long between polls.
_ESTABLISH_YIELD_S = 0.001
_ENDS_EVERY_NS = 100_000_000
# Partitions whose source end is read per look (each read finds its topic by name in
# librdkafka: ~15 us here); a slot of 2,500 partitions sees each end every 2.5 s.
_ENDS_PER_LOOK = 100
_SKIP = object()


class FlowUnit:
    """See the module docstring. ``desired`` is replaced by the control thread."""

    def __init__(self, plan: UnitPlan, lease: Lease, nudge: Callable[[], None]) -> None:
        self.flow = plan.flow
        self.lease = lease
        self.desired = plan
        self.stop_requested = False
        self.exited = False
        self.lock = threading.Lock()
        self._nudge = nudge
        # Guarded by lock.
        self._parts: dict[Key, PartitionCopy] = {}
        self._by_remote: dict[Key, PartitionCopy] = {}
        self._confirmed_stopped: set[PlanKey] = set()
        # The last entry of each partition plan the driver took in (control thread), and
        # the partitions whose entry may differ from it (copier/partition.py).
        self._taken: dict[PlanKey, dict[str, Any]] = {}
        self._changed: dict[PartitionCopy, None] = {}
        self._failure: Failure | None = None
        self._broken_epoch = -1
        self._poll_error: str | None = None
        self._applied_epoch = plan.epoch
        self._applied_version = -1
        self._producer: Producers | None = None
        self._producer_settings: Mapping[str, str] | None = None
        self._polling = False
        self._now_ms = 0
        self._drop_pending = False
        self._callback_error: BaseException | None = None
        # The copy loop thread's own.
        self._consumer: Consumer | None = None
        self._consumer_settings = plan.consumer
        self._max_records = clients.max_poll_records(plan.consumer)
        self._ends_seen_ns = 0
        # The partitions in the order their ends are read, and where the next look starts
        # (None: rebuilt after the partitions changed).
        self._ends_order: list[PartitionCopy] | None = None
        self._ends_next = 0
        self._reassign = False
        # The plan last applied, and whether applying it left something to finish (a
        # partition taken away still sending, or not yet seen stopped by the driver): the
        # loop applies a plan again only then, so a pass over thousands of partitions
        # follows a change, not every poll.
        self._applied: UnitPlan | None = None
        self._unsettled = False

    def update(self, plan: UnitPlan) -> None:
        self.desired = plan

    def request_stop(self) -> None:
        """Stop sending, let what was sent be acknowledged, close the clients, exit."""
        self.stop_requested = True

    # -- the loop ----------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._loop()
        except Exception as exc:  # noqa: BLE001 - reported as the unit's failure
            log.exception("copy loop of %s failed", self.flow)
            with self.lock:
                self._break("transient", None, -1, f"copy loop of {self.flow} failed: {exc!r}")
        finally:
            try:
                self._close()
            finally:
                with self.lock:
                    for p in self._parts.values():
                        p.stop()
                    self.exited = True
                self._nudge()

    def _loop(self) -> None:
        self._consumer = clients.consumer(self._consumer_settings)
        while not self.stop_requested:
            plan = self.desired
            with self.lock:
                ready = self._recovered(plan)
                if ready:
                    self._follow_settings(plan)
                    self._follow(plan)
                    if not self.lease.valid():
                        if self._parts and not self._all_stopped():
                            self._break(
                                "lease",
                                None,
                                -1,
                                f"the lease of {self.flow} ran out in this slot (no answer from"
                                " the driver, or the driver holds none for this flow now)",
                            )
                        ready = False
                    else:
                        ready = any(p.state == SENDING for p in self._parts.values())
            if not ready:
                self._idle(0.02)
                continue
            batch = self._poll(plan)
            with self.lock:
                if batch:
                    self._copy(plan, batch)
                self._serve()
                self._see_ends()

    def _recovered(self, plan: UnitPlan) -> bool:
        """False while the unit is broken and not yet re-planned at a later epoch."""
        if self._failure is None:
            return True
        # A plan applied while the failure was recorded may have added a partition after
        # the break stopped the others: stop it too.
        for p in self._parts.values():
            p.stop()
        if plan.epoch <= self._broken_epoch or not self._all_stopped():
            return False
        # Re-planned after the driver reconciled: a new producer, new plans.
        self._applied_epoch = plan.epoch
        self._failure = None
        self._applied = None
        return True

    def _idle(self, seconds: float) -> None:
        with self.lock:
            self._serve()
        time.sleep(seconds)

    def _poll(self, plan: UnitPlan) -> list[Message]:
        """The next records: wait for one (briefly while copies are in flight), then take
        what else is already fetched."""
        consumer = self._consumer
        assert consumer is not None
        producer = self._producer
        busy = producer is not None and len(producer) > 0
        try:
            first = consumer.poll(_ACK_WAIT_S if busy else plan.poll_ms / 1000)
            if first is None:
                self._poll_error = None
                return []
            batch = [first]
            if self._max_records > 1:
                batch.extend(consumer.consume(self._max_records - 1, 0))
            return batch
        except KafkaException as exc:
            self._poll_error = f"reading {plan.source}: {exc.args[0] if exc.args else exc}"
            self._nudge()
            time.sleep(1)
            return []

    def _copy(self, plan: UnitPlan, batch: Iterable[Message]) -> None:
        """Hand the records of ``batch`` to the producer, as the rules say. This runs for
        every record: what it does per record is kept to the rules' checks."""
        consumer = self._consumer
        assert consumer is not None
        parts = self._parts
        changed = self._changed
        lease = self.lease
        clock = time.monotonic_ns
        producers = self._producer_for(plan)
        produce = None
        rewrite = plan.origin_header is not None or plan.copy_header is not None
        errors = 0
        topic: str | None = None
        partition = -1
        p: PartitionCopy | None = None
        # First copies of this producer in flight, and the records of their partitions
        # that must wait for those to be acknowledged (batch order kept).
        first: list[PartitionCopy] = []
        later: list[Message] = []
        for msg in batch:
            if msg.error() is not None:
                self._consumer_error(plan, msg)
                errors += 1
                continue
            if msg.partition() != partition or msg.topic() != topic:
                topic, partition = msg.topic(), msg.partition()
                p = parts.get((topic, partition))
                if p is not None:
                    produce = producers.for_codec(p.codec).produce
                    changed[p] = None  # its sends below are inline (PartitionCopy.sent)
            if p is None or p.state != SENDING or produce is None:
                continue
            if not p.established and p.inflight:
                later.append(msg)  # after its partition's first copy is acknowledged
                continue
            up = msg.offset()
            if up < p.next_send:
                continue  # fetched before a seek
            ts = msg.timestamp()[1]  # -1: none
            if up >= p.reserve:
                # Nothing lies between the last record sent and this one: this is where
                # sending goes on, and what the driver must reserve past.
                p.next_send = up
                p.await_reservation(ts)
                consumer.pause([TopicPartition(topic, partition)])
                self._nudge()
                continue
            if clock() >= lease.deadline_ns:
                # The rest of this batch is not sent: the consumer is ahead of what was
                # sent. Break the unit: every partition is re-planned and sought to an
                # exact position before it sends again.
                self._break(
                    "lease",
                    None,
                    -1,
                    f"the lease of {self.flow} ran out in this slot while copying",
                )
                return
            headers = msg.headers()
            if rewrite:
                headers = self._rewrite(plan, p, msg, up, headers)
                if headers is _SKIP:
                    continue
            value = msg.value()
            try:
                # A timestamp of 0 asks librdkafka for the current time: records without one.
                produce(p.remote, value, msg.key(), partition, None, None, ts if ts > 0 else 0,
                        headers)  # fmt: skip
            except BufferError:
                if not self._retry_full(plan, p, msg, up, ts, headers):
                    return
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() == KafkaError._FATAL or error.fatal():
                    self._on_fatal(error)
                else:  # refused before it was handed over: nothing of it is in flight
                    self._break(kind_of(error), p.key, up, error.str(), error.name())
                return
            # p.sent(), inlined.
            p.inflight.append((up, p.next_down, 0 if value is None else len(value), ts))
            p.next_send = up + 1
            p.next_down += 1
            if not p.established:
                first.append(p)
        if first and not self._establish(first):
            return
        if later:
            error = self._poll_error
            self._copy(plan, later)  # none of them is an error: this batch's is kept
            if errors:
                self._poll_error = error
        elif errors == 0:
            self._poll_error = None

    def _rewrite(
        self, plan: UnitPlan, p: PartitionCopy, msg: Message, up: int, headers: Any
    ) -> Any:
        """The headers of a copy into a shared (identity policy) target: the origin rule
        and the copy header. ``_SKIP`` when the record is not copied (the rule dropped it,
        or its origin header is malformed: the partition stops, a poison record)."""
        origin, copy_header = plan.origin_header, plan.copy_header
        if origin is not None:
            try:
                action = decide(headers, origin, plan.target)
            except MalformedOrigin as exc:
                p.stop(failure("poison", str(exc), topic=p.topic, partition=p.partition,
                               offset=up, error_class="MalformedOriginException"))  # fmt: skip
                assert self._consumer is not None
                self._consumer.pause([TopicPartition(p.topic, p.partition)])
                self._nudge()
                return _SKIP
            if action == DROP:
                p.dropped_one(up)
                return _SKIP
            if action == STAMP:
                headers = [*(headers or ()), (origin, plan.source.encode())]
        if copy_header is not None:
            # The remote partition has other writers: say which upstream record this is,
            # so that a restart can find the last one that landed.
            headers = [h for h in headers or () if h[0] != copy_header]
            headers.append((copy_header, f"{plan.source}/{up}".encode()))
        return headers

    def _establish(self, first: list[PartitionCopy]) -> bool:
        """Wait until the first copy a new producer sent to each partition of ``first`` is
        acknowledged, before it sends more there; False when the unit broke on one.

        A broker keeps the last sequence of each producer per partition. A batch of a
        producer it does not know yet is appended whatever its first sequence, so if that
        producer's first batch there failed (a record too large, a timestamp the topic
        refuses), a second batch already in flight would land after the hole. Once one
        copy is acknowledged, a failed batch makes every later one out of sequence: the
        broker refuses them, and the gap-less guarantee stops the producer.

        The first copies of a batch's partitions are in flight together and waited for
        once: a cold start of thousands of partitions waits one round trip per batch,
        not one per partition."""
        while any(p.inflight for p in first):
            if self._failure is not None or self._producer is None:
                return False
            self._serve(0.004)
            # The control thread reports meanwhile: a cold start's first copies of 1,000
            # partitions took tens of seconds to be acknowledged by a busy target, and a
            # slot that holds its lock that long stops reporting and is taken for lost.
            # Safe: the control thread only reads and confirms; the plans and the
            # partitions change on this thread alone.
            self.lock.release()
            try:
                time.sleep(_ESTABLISH_YIELD_S)
            finally:
                self.lock.acquire()
        if self._failure is not None:
            return False
        for p in first:
            p.established = True
        return True

    def _retry_full(
        self, plan: UnitPlan, p: PartitionCopy, msg: Message, up: int, ts: int, headers: Any
    ) -> bool:
        """The producer's queue is full: serve acknowledgements until it takes the record
        (within the lease); False when the unit broke meanwhile."""
        while True:
            self._serve(0.01)
            producer = self._producer
            if self._failure is not None or producer is None:
                return False
            if not self.lease.valid():
                self._break(
                    "lease",
                    None,
                    -1,
                    f"the lease of {self.flow} ran out in this slot while copying",
                )
                return False
            try:
                producer.for_codec(p.codec).produce(
                    p.remote, msg.value(), msg.key(), p.partition, None, None, max(ts, 0), headers
                )
                return True
            except BufferError:
                continue
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() == KafkaError._FATAL or error.fatal():
                    self._on_fatal(error)
                else:
                    self._break(kind_of(error), p.key, up, error.str(), error.name())
                return False

    def _consumer_error(self, plan: UnitPlan, msg: Message) -> None:
        error = msg.error()
        topic, partition = msg.topic(), msg.partition()
        if error.code() in _OUT_OF_RANGE and topic is not None and partition is not None:
            consumer = self._consumer
            assert consumer is not None
            consumer.pause([TopicPartition(topic, partition)])
            p = self._parts.get((topic, partition))
            if p is not None:
                offset = p.next_send
                p.stop(
                    failure(
                        "out_of_range",
                        f"offset {offset} is no longer (or not yet) in the source partition",
                        topic=topic,
                        partition=partition,
                        offset=offset,
                    )
                )
        else:
            self._poll_error = f"reading {plan.source}: {error.str()}"
        self._nudge()

    # -- the producer and its acknowledgements -------------------------------------------

    def _producer_for(self, plan: UnitPlan) -> Producers:
        producer = self._producer
        if producer is None:
            producer = self._producer = Producers(plan.producer, self._delivered)
            self._producer_settings = plan.producer
        return producer

    def _follow_settings(self, plan: UnitPlan) -> None:
        """New client settings from the driver (it sized them for a topic's larger
        records, copying.clients.sized_for_records), lock held. The producer is replaced
        once what it sent is acknowledged (the next one establishes every partition
        again, as after a break); the consumer at once, each partition assigned again at
        its next record to send."""
        if plan.producer is not self._producer_settings:
            producer = self._producer
            if producer is None or plan.producer == self._producer_settings:
                self._producer_settings = plan.producer
            else:
                deadline = time.monotonic() + _CLOSE_WAIT_S
                while self._producer is producer and len(producer) > 0:
                    if self._failure is not None or time.monotonic() > deadline:
                        return
                    self._serve(0.005)
                if self._producer is producer:
                    self._drop_producer()  # the next send builds one from plan.producer
        if plan.consumer is not self._consumer_settings:
            if self._consumer is not None and plan.consumer != self._consumer_settings:
                self._consumer.close()
                self._consumer = clients.consumer(plan.consumer)
                self._max_records = clients.max_poll_records(plan.consumer)
                self._reassign = True
            self._consumer_settings = plan.consumer

    def _serve(self, timeout: float = 0) -> None:
        """Serve the producer's acknowledgements (lock held)."""
        producer = self._producer
        if producer is None:
            return
        self._polling = True
        fatal: KafkaError | None = None
        # The acknowledgements' clock (their latency) is read once per poll, not per record.
        self._now_ms = time.time_ns() // 1_000_000
        try:
            producer.poll(timeout)
        except KafkaException as exc:
            fatal = exc.args[0] if exc.args else KafkaError(KafkaError._FATAL)
        finally:
            self._polling = False
        if self._callback_error is not None:
            error, self._callback_error = self._callback_error, None
            self._break("transient", None, -1, f"acknowledging copies of {self.flow}: {error!r}")
        if fatal is not None:
            self._on_fatal(fatal)
        elif self._drop_pending:
            self._drop_producer()

    def _delivered(self, error: KafkaError | None, msg: Message) -> None:
        """librdkafka's delivery report of one copy (inside ``producer.poll()``, lock held).
        This runs for every record copied: the common case (landed where planned) is
        :meth:`PartitionCopy.land`; everything else is :meth:`_not_landed`."""
        try:
            p = self._by_remote.get((msg.topic(), msg.partition()))
            if p is None or not p.inflight:
                return
            if error is None and p.land(msg.offset(), self._now_ms):
                return
            self._not_landed(p, error, msg.offset())
        except Exception as exc:  # noqa: BLE001 - never raise into librdkafka's callback
            self._callback_error = exc

    def _not_landed(self, p: PartitionCopy, error: KafkaError | None, offset: int | None) -> None:
        """The oldest copy in flight of ``p`` failed, or landed where the plan does not say
        (another writer), or where no sync can say: the unit breaks (lock held)."""
        up, expected, size, _ts = p.inflight[0]
        p.failed()
        if error is not None:
            if error.code() in _PURGED:
                return  # a purge follows a failure already recorded
            text = error.str()
            if error.code() == KafkaError.MSG_SIZE_TOO_LARGE:
                text += (
                    f" (the target refused a record whose value is {size:,} bytes:"
                    " the remote topic's max.message.bytes is lower)"
                )
            self._break(kind_of(error), p.key, up, text, error.name())
        elif offset is None:  # a shared partition's copy
            self._break("transient", p.key, up, "the broker did not say where a copy landed")
        else:
            self._break(
                "conflict",
                p.key,
                up,
                f"remote partition {p.remote}-{p.partition} took upstream offset {up} at"
                f" offset {offset} where offset {expected} was planned: something else"
                " writes to it",
            )

    def _on_fatal(self, error: KafkaError) -> None:
        """The producer stopped (its gap-less guarantee, or a fenced producer id). The
        failed batch's own delivery report, with the broker's reason, comes with the
        purge; only without one is the fatal error itself the unit's failure."""
        self._drop_producer()
        if self._failure is None:
            self._break(fatal_kind(error), None, -1, error.str(), error.name())

    def _break(
        self, kind: str, key: Key | None, offset: int, message: str, error_class: str | None = None
    ) -> None:
        """The first failure of the unit (lock held): every partition stops and waits for a
        plan of a later epoch; nothing the producer holds is sent any more."""
        if self._failure is not None:
            return
        self._failure = failure(
            kind,
            message,
            topic=key[0] if key else None,
            partition=key[1] if key else None,
            offset=offset,
            error_class=error_class,
        )
        self._broken_epoch = self.desired.epoch
        for p in self._parts.values():
            p.stop()
        self._drop_producer()
        self._nudge()

    def _drop_producer(self) -> None:
        """Purge the producer (queued and in-flight records: librdkafka forgets them, so
        none is sent or retried any more), take the delivery reports that settles, and
        let it go; a record still unsettled then is of unknown fate. Inside a delivery
        report this waits until ``poll()`` returned."""
        producer = self._producer
        if producer is None:
            return
        if self._polling:
            self._drop_pending = True
            return
        self._producer = None
        for p in self._parts.values():
            p.established = False
        self._drop_pending = False
        producer.purge(in_queue=True, in_flight=True)
        self._drain(producer, 5.0)
        for p in self._parts.values():
            p.abandon()
        del producer  # destroyed with its last reference

    def _drain(self, producer: Producers, seconds: float) -> None:
        """Serve delivery reports until nothing is in flight, for at most ``seconds``."""
        deadline = time.monotonic() + seconds
        self._now_ms = time.time_ns() // 1_000_000
        self._polling = True
        try:
            while len(producer) > 0 and time.monotonic() < deadline:
                try:
                    producer.poll(0.05)
                except KafkaException:
                    continue  # the producer stopped: its reports still come
        finally:
            self._polling = False

    def _close(self) -> None:
        """Stop every partition; let what was sent under a valid lease land (bounded by
        the delivery timeout) unless a failure stopped the producer; close the clients."""
        with self.lock:
            for p in self._parts.values():
                p.stop()
        deadline = time.monotonic() + _CLOSE_WAIT_S
        while time.monotonic() < deadline:
            with self.lock:
                producer = self._producer
                if producer is None or len(producer) == 0 or self._failure is not None:
                    break
                self._serve(0.05)
        with self.lock:
            if self._producer is not None and len(self._producer) > 0:
                self._break("transient", None, -1, "copies still unacknowledged at stop")
            self._drop_producer()
        if self._consumer is not None:
            self._consumer.close()

    # -- plans ----------------------------------------------------------------------------

    def _follow(self, plan: UnitPlan) -> None:
        """Apply ``plan`` if it is not the one applied, if applying that one left
        something to finish, or if a new consumer must be assigned (lock held): a pass
        over the partitions follows a change."""
        if plan is not self._applied or self._unsettled or self._reassign:
            self._apply(plan)

    def _apply(self, plan: UnitPlan) -> None:
        """Start, restart, stop partitions as the plan says; move reservations on (lock
        held)."""
        consumer = self._consumer
        assert consumer is not None
        before = self._applied
        same = before is not None and before.partitions is plan.partitions
        if same and not self._unsettled and not self._reassign:
            # The same plans (only the answer's version is new): nothing to start or stop.
            self._applied_version = plan.version
            self._applied = plan
            return
        reassign = self._reassign
        unsettled = False
        # What changes of the consumer's assignment: only these are told to it (a whole
        # assign() of 2,500 partitions costs ~0.3 s of CPU and fetches them all again).
        added: list[PartitionCopy] = []
        removed: list[TopicPartition] = []
        for key, p in list(self._parts.items()):
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
            if wanted is None and (key[0], key[1], p.plan) not in self._confirmed_stopped:
                unsettled = True
                continue  # the driver has not yet seen it stopped
            del self._parts[key]
            self._by_remote.pop((p.remote, key[1]), None)
            self._confirmed_stopped.discard((key[0], key[1], p.plan))
            self._taken.pop((key[0], key[1], p.plan), None)
            self._changed.pop(p, None)
            removed.append(TopicPartition(key[0], key[1]))
        for key, w in plan.partitions.items():
            if key in self._parts:
                continue
            p = PartitionCopy(key[0], key[1], w.plan, w.remote, w.start, w.down, w.reserve,
                              plan.shared, w.codec, self._changed)  # fmt: skip
            self._parts[key] = p
            self._by_remote[(w.remote, key[1])] = p
            added.append(p)
        if added or removed:
            self._ends_order = None
        if not reassign and (added or removed):
            reassign = not self._assign_changes(consumer, added, removed)
        if reassign:
            live = [p for p in self._parts.values() if not p.stopped]
            # At the next record to send: what the consumer fetched past it is fetched again.
            consumer.assign([TopicPartition(p.topic, p.partition, p.next_send) for p in live])
            _pause_as_they_are(consumer, live)
            self._reassign = False
        self._applied_version = plan.version
        self._applied, self._unsettled = plan, unsettled

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

    def _all_stopped(self) -> bool:
        return all(p.state == STOPPED for p in self._parts.values())

    def _see_ends(self) -> None:
        """Where the partitions' sources end, as the consumer's fetches said (no request),
        reported for the lag: at most every 100 ms, :data:`_ENDS_PER_LOOK` partitions in
        turn (reading all 2,500 of a slot took ~38 ms, ten times a second)."""
        now = time.monotonic_ns()
        if now - self._ends_seen_ns < _ENDS_EVERY_NS:
            return
        self._ends_seen_ns = now
        consumer = self._consumer
        assert consumer is not None
        order = self._ends_order
        if order is None:  # the partitions changed; the turn goes on where it was
            order = self._ends_order = list(self._parts.values())
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
                self._changed[p] = None

    # -- reports (control thread) ---------------------------------------------------------

    def report(
        self,
        counts: dict[PlanKey, int],
        stopped: set[PlanKey],
        sent: dict[PlanKey, dict[str, Any]] | None = None,
        *,
        full: bool = True,
    ) -> tuple[dict[str, Any], bool]:
        """This unit's part of a report, and whether the unit had exited when it was made:
        every partition when ``full``, else (copy protocol 2) only those whose entry
        differs from the last one the driver took in, or that carry syncs. ``counts`` gets
        the number of syncs it includes per partition plan, ``stopped`` the partition
        plans it shows stopped, ``sent`` the entries it includes, for :meth:`confirm`.

        A delta looks only at the partitions that changed (copier/partition.py), so a
        report of thousands of idle partitions costs what changed. One stays among them
        until a report finds the driver has its entry and nothing in flight that could
        change it unseen (an acknowledgement does not mark it)."""
        with self.lock:
            items = []
            parts = self._parts
            if full:
                visit = list(parts.values())
            else:
                visit = []
                for p in list(self._changed):
                    if parts.get((p.topic, p.partition)) is p:
                        visit.append(p)
                    else:
                        del self._changed[p]  # gone from the unit
            for p in visit:
                item = p.report(True)
                plan_key = (p.topic, p.partition, p.plan)
                if not full and not item["syncs"] and self._taken.get(plan_key) == item:
                    if not p.inflight:
                        del self._changed[p]  # the driver has it; nothing changes it unseen
                    continue  # the driver has this already
                counts[plan_key] = len(item["syncs"])
                if item["state"] == STOPPED:
                    stopped.add(plan_key)
                if sent is not None:
                    sent[plan_key] = {**item, "syncs": []}
                items.append(item)
            entry = {
                "applied": self._applied_version,
                "flow": self.flow,
                "epoch": self._applied_epoch,
                "broken": self._failure,
                "broken_epoch": self._broken_epoch,
                "poll_error": self._poll_error,
                "exited": self.exited,
                "lease_ms": self.lease.remaining_ms(),
                "partitions": items,
            }
            return entry, self.exited

    def confirm(
        self,
        counts: dict[PlanKey, int],
        stopped: set[PlanKey],
        sent: dict[PlanKey, dict[str, Any]] | None = None,
    ) -> None:
        """The driver took in a report: drop the syncs it had, forget what it saw stopped,
        and remember the entries it has (a later delta leaves them out while they stay
        the same)."""
        with self.lock:
            parts = self._parts
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
