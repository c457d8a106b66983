"""A flow unit's records handed to its producer (:meth:`Sender.send`), and the
producer's acknowledgements.

The producer (one per codec the partitions' sources use, treated as one:
:mod:`~srm_driver.copier.producers`) is idempotent, up to 5 requests in flight kept in
order, with librdkafka's gap-less guarantee. What this module enforces of the unit's
rules (:mod:`srm_driver.copier.unit`):

* every acknowledged offset must be the planned one (unless the target is shared); any
  other means another writer, and the unit breaks (:meth:`Sender.delivered`);
* the first failed send breaks the unit, and whatever the producer still holds is purged
  (:meth:`Sender.drop`), so nothing queued behind a failure lands after a hole;
* the first copy a new producer sends to a partition is acknowledged before it sends
  more there (:meth:`Sender.establish`);
* nothing is handed over without a valid lease or past a partition's reservation, and a
  malformed origin header stops its partition alone.

librdkafka's delivery reports run inside ``poll()`` on the copy loop's thread, with the
unit's lock held; a producer dropped inside one is dropped once ``poll()`` returned. A
failure is the unit's (``fail``: its first failure stops every partition and drops the
producer).

:class:`Sender` is longer than 250 lines on purpose: the send path and the
acknowledgements share the producer and its state and run for every record; split
further, each record would cross one more object.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition
from srm_common.domain.origin import MalformedOrigin

from srm_driver.copier.assignment import Assignment, Key
from srm_driver.copier.failures import conflict, failure, fatal_kind, kind_of, too_large
from srm_driver.copier.headers import DROPPED, copy_headers
from srm_driver.copier.lease import Lease
from srm_driver.copier.partition import SENDING, PartitionCopy
from srm_driver.copier.plan import UnitPlan
from srm_driver.copier.producers import Producers

_PURGED = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})
# While first copies are acknowledged, the lock is let go this long between polls.
_ESTABLISH_YIELD_S = 0.001
CLOSE_WAIT_S = 60.0

# The unit's failure: kind, the partition blamed (None: the unit), its offset, what
# happened, the client's error name.
Fail = Callable[[str, Key | None, int, str, str | None], None]


class Sender:
    """See the module docstring; every method is called with ``lock`` held."""

    def __init__(
        self,
        flow: str,
        held: Assignment,
        lock: threading.Lock,
        lease: Lease,
        fail: Fail,
        failed: Callable[[], bool],
        nudge: Callable[[], None],
    ) -> None:
        self._flow = flow
        self._nudge = nudge
        self._held = held
        self._lock = lock
        self._lease = lease
        self._fail = fail
        self._failed = failed
        self.producer: Producers | None = None
        self.settings: Mapping[str, str] | None = None
        self._polling = False
        self._now_ms = 0
        self._drop_pending = False
        self._callback_error: BaseException | None = None

    def __len__(self) -> int:
        """Copies handed over and not settled yet."""
        producer = self.producer
        return 0 if producer is None else len(producer)

    def producer_for(self, settings: Mapping[str, str]) -> Producers:
        producer = self.producer
        if producer is None:
            producer = self.producer = Producers(settings, self.delivered)
            self.settings = settings
        return producer

    def follow(self, settings: Mapping[str, str]) -> bool:
        """New producer settings from the driver: the producer is replaced once what it
        sent is acknowledged (the next one establishes every partition again, as after a
        break). False while that waits (a failure, or copies unsettled past
        :data:`CLOSE_WAIT_S`): the unit tries again with its next plan."""
        if settings is self.settings:
            return True
        producer = self.producer
        if producer is None or settings == self.settings:
            self.settings = settings
            return True
        deadline = time.monotonic() + CLOSE_WAIT_S
        while self.producer is producer and len(producer) > 0:
            if self._failed() or time.monotonic() > deadline:
                return False
            self.serve(0.005)
        if self.producer is producer:
            self.drop()  # the next send builds one from the new settings
        return True

    def send(
        self,
        plan: UnitPlan,
        batch: Iterable[Message],
        consumer: Consumer,
        consumer_error: Callable[[UnitPlan, Message], None],
    ) -> int | None:
        """Hand the records of ``batch`` to the producer, as the rules say: how many of
        them were the consumer's errors (handed to ``consumer_error``), None when the
        unit broke. This runs for every record: what it does per record is kept to the
        rules' checks."""
        parts = self._held.parts
        changed = self._held.changed
        lease = self._lease
        clock = time.monotonic_ns
        producers = self.producer_for(plan.producer)
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
                consumer_error(plan, msg)
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
                message = f"the lease of {self._flow} ran out in this slot while copying"
                self._fail("lease", None, -1, message, None)
                return None
            headers = msg.headers()
            if rewrite:
                try:
                    headers = copy_headers(plan, up, headers)
                except MalformedOrigin as exc:  # a poison record: the partition stops
                    why = failure("poison", str(exc), topic=topic, partition=partition,
                                  offset=up, error_class="MalformedOriginException")  # fmt: skip
                    self._held.stop_one(consumer, p.key, why)
                    self._nudge()
                    continue
                if headers is DROPPED:
                    p.dropped_one(up)
                    continue
            value = msg.value()
            try:
                # A timestamp of 0 asks librdkafka for the current time: records without one.
                produce(p.remote, value, msg.key(), partition, None, None, ts if ts > 0 else 0,
                        headers)  # fmt: skip
            except BufferError:
                if not self.retry_full(p, msg, up, ts, headers):
                    return None
            except KafkaException as exc:
                self.refused(p, up, exc)  # nothing of it is in flight
                return None
            # p.sent(), inlined.
            p.inflight.append((up, p.next_down, 0 if value is None else len(value), ts))
            p.next_send = up + 1
            p.next_down += 1
            if not p.established:
                first.append(p)
        if first and not self.establish(first):
            return None
        if later and self.send(plan, later, consumer, consumer_error) is None:
            return None  # (none of them is an error: this batch's count stands)
        return errors

    def serve(self, timeout: float = 0) -> None:
        """Serve the producer's acknowledgements."""
        producer = self.producer
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
            self._fail(
                "transient", None, -1, f"acknowledging copies of {self._flow}: {error!r}", None
            )
        if fatal is not None:
            self.on_fatal(fatal)
        elif self._drop_pending:
            self.drop()

    def delivered(self, error: KafkaError | None, msg: Message) -> None:
        """librdkafka's delivery report of one copy (inside ``producer.poll()``). This runs
        for every record copied: the common case (landed where planned) is
        :meth:`PartitionCopy.land`; everything else is :meth:`_not_landed`."""
        try:
            p = self._held.by_remote.get((msg.topic(), msg.partition()))
            if p is None or not p.inflight:
                return
            if error is None and p.land(msg.offset(), self._now_ms):
                return
            self._not_landed(p, error, msg.offset())
        except Exception as exc:  # noqa: BLE001 - never raise into librdkafka's callback
            self._callback_error = exc

    def _not_landed(self, p: PartitionCopy, error: KafkaError | None, offset: int | None) -> None:
        """The oldest copy in flight of ``p`` failed, or landed where the plan does not say
        (another writer), or where no sync can say: the unit breaks."""
        up, expected, size, _ts = p.inflight[0]
        p.failed()
        if error is not None:
            if error.code() in _PURGED:
                return  # a purge follows a failure already recorded
            text = error.str()
            if error.code() == KafkaError.MSG_SIZE_TOO_LARGE:
                text += too_large(size)
            self._fail(kind_of(error), p.key, up, text, error.name())
        elif offset is None:  # a shared partition's copy
            self._fail("transient", p.key, up, "the broker did not say where a copy landed", None)
        else:
            text = conflict(p.remote, p.partition, up, offset, expected)
            self._fail("conflict", p.key, up, text, None)

    def on_fatal(self, error: KafkaError) -> None:
        """The producer stopped (its gap-less guarantee, or a fenced producer id). The
        failed batch's own delivery report, with the broker's reason, comes with the
        purge; only without one is the fatal error itself the unit's failure."""
        self.drop()
        self._fail(fatal_kind(error), None, -1, error.str(), error.name())

    def refused(self, p: PartitionCopy, up: int, exc: KafkaException) -> None:
        """``produce()`` refused the copy of upstream ``up``: nothing of it is in flight."""
        error = exc.args[0]
        if error.code() == KafkaError._FATAL or error.fatal():
            self.on_fatal(error)
        else:
            self._fail(kind_of(error), p.key, up, error.str(), error.name())

    def drop(self) -> None:
        """Purge the producer (queued and in-flight records: librdkafka forgets them, so
        none is sent or retried any more), take the delivery reports that settles, and
        let it go; a record still unsettled then is of unknown fate. Inside a delivery
        report this waits until ``poll()`` returned."""
        producer = self.producer
        if producer is None:
            return
        if self._polling:
            self._drop_pending = True
            return
        self.producer = None
        parts = self._held.parts
        for p in parts.values():
            p.established = False
        self._drop_pending = False
        producer.purge(in_queue=True, in_flight=True)
        self._drain(producer, 5.0)
        for p in parts.values():
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

    def settle(self) -> None:
        """Serve acknowledgements until nothing is in flight, the unit failed or
        :data:`CLOSE_WAIT_S` passed (at a stop), the lock taken for each poll only."""
        deadline = time.monotonic() + CLOSE_WAIT_S
        while time.monotonic() < deadline:
            with self._lock:
                if len(self) == 0 or self._failed():
                    return
                self.serve(0.05)

    def establish(self, first: list[PartitionCopy]) -> bool:
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
            if self._failed() or self.producer is None:
                return False
            self.serve(0.004)
            # The control thread reports meanwhile: a cold start's first copies of 1,000
            # partitions took tens of seconds to be acknowledged by a busy target, and a
            # slot that holds its lock that long stops reporting and is taken for lost.
            # Safe: the control thread only reads and confirms; the plans and the
            # partitions change on the loop's thread alone.
            self._lock.release()
            try:
                time.sleep(_ESTABLISH_YIELD_S)
            finally:
                self._lock.acquire()
        if self._failed():
            return False
        for p in first:
            p.established = True
        return True

    def retry_full(self, p: PartitionCopy, msg: Message, up: int, ts: int, headers: Any) -> bool:
        """The producer's queue is full: serve acknowledgements until it takes the record
        (within the lease); False when the unit broke meanwhile."""
        while True:
            self.serve(0.01)
            producer = self.producer
            if self._failed() or producer is None:
                return False
            if not self._lease.valid():
                message = f"the lease of {self._flow} ran out in this slot while copying"
                self._fail("lease", None, -1, message, None)
                return False
            try:
                producer.for_codec(p.codec).produce(
                    p.remote, msg.value(), msg.key(), p.partition, None, None, max(ts, 0), headers
                )
                return True
            except BufferError:
                continue
            except KafkaException as exc:
                self.refused(p, up, exc)
                return False
