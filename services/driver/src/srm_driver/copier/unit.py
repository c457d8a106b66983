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
  there (:meth:`Sender.establish <srm_driver.copier.sender.Sender.establish>`);
* every acknowledged offset must be the planned one (unless the target is shared); a
  different one means another writer: the unit breaks;
* the first failed send breaks the unit: whatever the producer still holds is purged (a
  gap-causing failure already stopped it: the gap-less guarantee makes it fatal), so
  nothing queued behind the failure lands after a hole, and every partition of the unit
  waits for a new plan (a higher epoch): the driver reconciles the failed one and each
  one a send of unknown fate ended (``uncertain``), and restarts the others where they
  were acknowledged, so a partition's report entry must say exactly that;
* a partition-level problem (a malformed origin header, an offset out of range) stops
  that partition only; the driver re-plans or halts it.

Threads: the loop runs on a thread of its own; librdkafka's delivery reports run inside
its ``producer.poll()`` calls, on the same thread. The control thread reads reports and
confirms them. Everything the two share is guarded by ``lock``, which the loop never
holds while it blocks (only ``consumer.poll()`` and sleeps block), nor for long while it
waits for acknowledgements (``Sender.establish`` lets it go between polls).

The parts: the loop, its lease, plans and failures are here; the partitions, the
consumer's assignment and what the driver has of them are
:mod:`~srm_driver.copier.assignment`; handing records to the producer and its
acknowledgements are :mod:`~srm_driver.copier.sender`. (:class:`FlowUnit` keeps some
305 lines: the loop, its stop and its failures share one state under one lock.)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
)

from srm_driver.copier import clients
from srm_driver.copier.assignment import Assignment, Key, PlanKey
from srm_driver.copier.failures import failure
from srm_driver.copier.lease import Lease
from srm_driver.copier.partition import SENDING, Failure
from srm_driver.copier.plan import UnitPlan
from srm_driver.copier.producers import Producers
from srm_driver.copier.sender import Sender

log = logging.getLogger(__name__)

_OUT_OF_RANGE = frozenset({KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE})
# While records are in flight, the loop waits at most this long for source records, so
# their acknowledgements (served by producer.poll on this thread) are counted promptly.
_ACK_WAIT_S = 0.002


class FlowUnit:
    """See the module docstring. ``desired`` is replaced by the control thread."""

    # Whether it passes whole batches through (:class:`~srm_driver.copier.batch_unit.BatchUnit`).
    batches = False

    def __init__(self, plan: UnitPlan, lease: Lease, nudge: Callable[[], None]) -> None:
        self.flow = plan.flow
        self.lease = lease
        self.desired = plan
        self.stop_requested = False
        self.exited = False
        self.lock = threading.Lock()
        self._nudge = nudge
        # Guarded by lock.
        self._held = Assignment(plan.flow)
        self._parts = self._held.parts  # (the same mapping, read on every record)
        self._sender = Sender(
            plan.flow,
            self._held,
            self.lock,
            lease,
            self._break,
            lambda: self._failure is not None,
            nudge,
        )
        self._failure: Failure | None = None
        self._broken_epoch = -1
        self._poll_error: str | None = None
        self._applied_epoch = plan.epoch
        self._applied_version = -1
        # The copy loop thread's own.
        self._consumer: Consumer | None = None
        self._consumer_settings = plan.consumer
        self._max_records = clients.max_poll_records(plan.consumer)
        self._reassign = False
        # The plan last applied, and whether applying it left something to finish (a
        # partition taken away still sending, or not yet seen stopped by the driver): the
        # loop applies a plan again only then, so a pass over thousands of partitions
        # follows a change, not every poll.
        self._applied: UnitPlan | None = None
        self._unsettled = False

    @property
    def _producer(self) -> Producers | None:
        return self._sender.producer

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
        self._open()
        while not self.stop_requested:
            plan = self.desired
            if not self._ready(plan):
                self._idle(0.02)
                continue
            batch = self._poll(plan)
            with self.lock:
                if batch:
                    self._copy(plan, batch)
                self._serve()
                self._see_ends()

    def _open(self) -> None:
        self._consumer = clients.consumer(self._consumer_settings)

    def _ready(self, plan: UnitPlan) -> bool:
        """Apply ``plan`` (once the unit recovered from a failure) and say whether a
        partition may send: never without a valid lease (running out of it with
        partitions still running breaks the unit)."""
        with self.lock:
            if not self._recovered(plan):
                return False
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
                return False
            return any(p.state == SENDING for p in self._parts.values())

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
        busy = len(self._sender) > 0
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
        """Hand the records of ``batch`` to the producer, as the rules say
        (:meth:`Sender.send`); a batch without a consumer error clears the last one."""
        assert self._consumer is not None
        if self._sender.send(plan, batch, self._consumer, self._consumer_error) == 0:
            self._poll_error = None

    def _consumer_error(self, plan: UnitPlan, msg: Message) -> None:
        error = msg.error()
        topic, partition = msg.topic(), msg.partition()
        if error.code() in _OUT_OF_RANGE and topic is not None and partition is not None:
            assert self._consumer is not None
            p = self._parts.get((topic, partition))
            offset = p.next_send if p is not None else -1
            gone = f"offset {offset} is no longer (or not yet) in the source partition"
            why = failure("out_of_range", gone, topic=topic, partition=partition, offset=offset)
            self._held.stop_one(self._consumer, (topic, partition), why)
        else:
            self._poll_error = f"reading {plan.source}: {error.str()}"
        self._nudge()

    # -- the producer and failures ---------------------------------------------------------

    def _producer_for(self, plan: UnitPlan) -> Producers:
        return self._sender.producer_for(plan.producer)

    def _serve(self, timeout: float = 0) -> None:
        """Serve the producer's acknowledgements (lock held)."""
        self._sender.serve(timeout)

    def _follow_settings(self, plan: UnitPlan) -> None:
        """New client settings from the driver (it sized them for a topic's larger
        records, copying.clients.sized_for_records), lock held. The producer is replaced
        once what it sent is acknowledged (:meth:`Sender.follow`); the consumer at once,
        each partition assigned again at its next record to send."""
        if not self._sender.follow(plan.producer):
            return
        if plan.consumer is not self._consumer_settings:
            if self._consumer is not None and plan.consumer != self._consumer_settings:
                self._consumer.close()
                self._consumer = clients.consumer(plan.consumer)
                self._max_records = clients.max_poll_records(plan.consumer)
                self._reassign = True
            self._consumer_settings = plan.consumer

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
        self._sender.drop()
        self._nudge()

    def _close(self) -> None:
        """Stop every partition; let what was sent under a valid lease land (bounded by
        the delivery timeout) unless a failure stopped the producer; close the clients."""
        with self.lock:
            for p in self._parts.values():
                p.stop()
        self._sender.settle()
        with self.lock:
            if len(self._sender) > 0:
                self._break("transient", None, -1, "copies still unacknowledged at stop")
            self._sender.drop()
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
        held; :meth:`Assignment.apply`)."""
        consumer = self._consumer
        assert consumer is not None
        before = self._applied
        same = before is not None and before.partitions is plan.partitions
        if not same or self._unsettled or self._reassign:
            self._unsettled = self._held.apply(plan, consumer, self._reassign)
            self._reassign = False
        # (The same plans and nothing to finish: only the answer's version is new.)
        self._applied_version = plan.version
        self._applied = plan

    def _all_stopped(self) -> bool:
        return self._held.all_stopped()

    def _see_ends(self) -> None:
        assert self._consumer is not None
        self._held.see_ends(self._consumer)

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
        differs from the last one the driver took in, or that carry syncs
        (:meth:`Assignment.entries`). ``counts`` gets the number of syncs it includes per
        partition plan, ``stopped`` the partition plans it shows stopped, ``sent`` the
        entries it includes, for :meth:`confirm`."""
        with self.lock:
            entry = {
                "applied": self._applied_version,
                "flow": self.flow,
                "epoch": self._applied_epoch,
                "broken": self._failure,
                "broken_epoch": self._broken_epoch,
                "poll_error": self._poll_error,
                "exited": self.exited,
                "lease_ms": self.lease.remaining_ms(),
                "partitions": self._held.entries(counts, stopped, sent, full=full),
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
            self._held.confirm(counts, stopped, sent)
