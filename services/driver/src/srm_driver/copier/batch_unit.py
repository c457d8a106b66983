"""One flow's copy loop in one slot that passes whole record batches through
(``srm.copy.batches``): Fetch from the source partitions' leaders, each data batch
re-stamped for this unit's idempotent producer (its records never decoded, its codec
kept), Produce to the remote partitions' leaders, with the slot's own protocol layer
(:mod:`srm_driver.copier.wire`). Which batches pass through is
:mod:`~srm_driver.copier.batch_rules`.

It is a :class:`~srm_driver.copier.unit.FlowUnit` whose consumer and producer are
replaced, so the unit's rules are the same code: plans, reservations and reports
(:class:`~srm_driver.copier.assignment.Assignment`,
:class:`~srm_driver.copier.partition.PartitionCopy`), the lease, the break and the
recovery at a later epoch. Per batch:

* nothing is sent without a valid lease (checked before every Produce request) or past
  a partition's reservation (a batch must end below it, else the partition waits);
* a new producer's first batch to a partition is acknowledged before it sends more
  there (the rule of :meth:`Sender.establish <srm_driver.copier.sender.Sender.establish>`);
  at most :data:`WINDOW` Produce requests are in flight per target broker, one batch per
  partition in each, in sequence;
* the Produce answer's base offset must be the planned downstream offset
  (:meth:`PartitionCopy.land_batch`): any other means another writer and the unit breaks;
  offset syncs follow batch boundaries (a batch's offsets are contiguous, so its first
  record after a gap and the last acknowledged record at each report say everything);
* the first refused Produce, one unanswered within the write timeout, or a lost target
  connection breaks the unit: the target connections are closed (nothing queued behind
  the failure is sent; the broker refuses anything out of sequence), every batch in
  flight is of unknown fate, and every partition waits for a new plan, as FlowUnit's
  failures do. A leader that moved on the target is one of those failures (the next
  plan starts a new producer on fresh metadata); on the source it is only a new look
  at the metadata before the next Fetch. Should the target's metadata name a new leader
  while a partition has batches in flight to the old one (it is looked up again for a
  new remote topic or partition, or one without a leader), its next batch waits for
  their answers: answers are matched to a partition's batches in send order, which
  only one connection keeps;
* a batch that cannot pass through stops its partition alone as ``poison`` (the
  driver halts it after ``srm.poison.max.tries``, with the sentence saying how to copy
  it); an offset out of range stops it as ``out_of_range``, as the consumer's does.

Threads as FlowUnit's: the loop waits on the sockets without the lock and takes it to
act on what came; brokers are connected (clusters, remote partitions' leaders, the
producer id) before it takes the lock, so a slow broker never holds up the reports.
Counters: ``records`` counts records, ``bytes`` the batches' bytes as sent
(compressed), latency every record of a batch at the batch's newest timestamp.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from srm_driver.copier import batch_rebuild, batch_rules, clients
from srm_driver.copier.assignment import Key
from srm_driver.copier.batch_clients import (
    BatchClients,
    Connect,
    FetchEnds,
    Sent,
    TargetFailed,
    read_committed,
)
from srm_driver.copier.failures import NOT_PASSED_THROUGH, failure, login_hint, on_target
from srm_driver.copier.lease import Lease
from srm_driver.copier.partition import SENDING, PartitionCopy
from srm_driver.copier.plan import UnitPlan
from srm_driver.copier.unit import FlowUnit
from srm_driver.copier.wire.apis import PRODUCE
from srm_driver.copier.wire.connection import Connection
from srm_driver.copier.wire.errors import BrokerError, WireError
from srm_driver.copier.wire.fetch import FetchedPartition
from srm_driver.copier.wire.produce import Buffer, produce_request

WINDOW = 5  # Produce requests in flight per target broker (an idempotent producer's most)
_BUSY_WAIT_MS = 5  # a Fetch's wait while Produce answers are due
_OUT_OF_RANGE = 1
_MOVED = frozenset({3, 5, 6, 74, 75})  # the source partition's leader moved: look again


class BatchUnit(FlowUnit):
    """See the module docstring. ``connect`` builds a cluster from a client's settings
    (the slot's root: :func:`srm_driver.copier.clients.wire_cluster`). About 300 lines:
    FlowUnit's steps for whole batches share the unit's one state under its one lock."""

    batches = True

    def __init__(
        self,
        plan: UnitPlan,
        lease: Lease,
        nudge: Callable[[], None],
        connect: Connect = clients.wire_cluster,
    ) -> None:
        super().__init__(plan, lease, nudge)
        self._clients = BatchClients(connect)
        self._ends = FetchEnds()
        self._producer_settings = plan.producer
        self._sent: deque[Sent] = deque()
        # Where each partition (under its current plan) is fetched from next.
        self._fetch_at: dict[Key, tuple[PartitionCopy, int]] = {}
        # The target connection each remote partition's batches in flight went to, and
        # the partitions waiting for those answers before they send to a new leader.
        self._routes: dict[Key, Connection] = {}
        self._rerouted: set[Key] = set()
        self._refused = batch_rebuild.Refused()
        self._write_timeout_ns = clients.size_of(plan.producer, "delivery.timeout.ms", 10_000)
        self._write_timeout_ns *= 1_000_000
        self._lease_deadline = lambda: lease.deadline_ns

    # -- FlowUnit's steps, for batches ---------------------------------------------------

    def _open(self) -> None:
        self._consumer = self._ends  # type: ignore[assignment]

    def _poll(self, plan: UnitPlan) -> list[FetchedPartition]:  # type: ignore[override]
        """Fetch what the sending partitions have next (waiting on the sockets without
        the lock); a source, or a target before anything is sent, that fails is said in
        the report (naming which) and tried again in 1 s."""
        try:
            return self._fetch(plan)
        except TargetFailed as exc:
            # Nothing was sent by what failed: said in the report, tried again in 1 s
            # (from a new connection unless batches are in flight, whose answers say more).
            with self.lock:
                self._poll_error = on_target(plan.target, exc.__cause__ or exc)
                if not self._sent:
                    self._close_target()
        except (WireError, BrokerError) as exc:
            with self.lock:
                if self._clients.broken_target():
                    self._break("transient", None, -1, on_target(plan.target, exc))
                    return []
                self._poll_error = f"reading {plan.source}: {exc}{login_hint(plan.source, exc)}"
                self._clients.close_source()
        self._nudge()
        time.sleep(1)
        return []

    def _copy(self, plan: UnitPlan, fetched: list[FetchedPartition]) -> None:  # type: ignore[override]
        """Send what ``fetched`` holds, as the rules say (lock held); a target leader that
        cannot be reached breaks the unit."""
        if self._clients.producer is None or self._failure is not None:
            return
        try:
            self._copy_fetched(plan, fetched)
        except (WireError, BrokerError) as exc:
            self._break("transient", None, -1, on_target(plan.target, exc))

    def _copy_fetched(self, plan: UnitPlan, fetched: list[FetchedPartition]) -> None:
        rounds: list[dict[Connection, Sent]] = []
        bodies: list[dict[Connection, dict[str, list[tuple[int, list[Buffer]]]]]] = []
        committed = read_committed(plan.consumer)
        errors = 0
        for answer in fetched:
            key = (answer.topic, answer.partition)
            p = self._parts.get(key)
            at = self._fetch_at.get(key)
            if p is None or p.state != SENDING or at is None or at[0] is not p:
                continue
            if answer.error:
                errors += 1
                self._fetch_refused(plan, p, answer)
                continue
            stable = answer.last_stable_offset if committed else answer.high_watermark
            self._ends.ends[key] = stable if stable >= 0 else answer.high_watermark
            found, after = batch_rules.data_batches(
                answer.records, answer.aborted, read_committed=committed
            )
            position, k = at[1], 0
            batches = deque(found)
            alone = self._refused.at(key, p.next_send)
            while batches:
                batch = batches.popleft()
                decision = batch_rebuild.decide(
                    batch, p.next_send, p.reserve, plan.batch_window, alone
                )
                if isinstance(decision, list):  # rebuilt: decided on batch by batch
                    batches.extendleft(reversed(decision))
                    continue
                if decision == batch_rules.SKIP:
                    position = batch.last + 1
                    continue
                if decision == batch_rules.WAIT:
                    p.next_send = batch.first  # nothing lies between: sending goes on here
                    p.await_reservation(batch.max_timestamp)
                    self._nudge()
                    break
                if decision != batch_rules.SEND:
                    why = failure("poison", decision, topic=p.topic, partition=p.partition,
                                  offset=max(batch.first, p.next_send),
                                  error_class=NOT_PASSED_THROUGH)  # fmt: skip
                    self._held.stop_one(self._ends, key, why)  # type: ignore[arg-type]
                    self._nudge()
                    break
                if not p.established and p.inflight:
                    break  # after this producer's first batch here is acknowledged
                remote = (p.remote, p.partition)
                connection = self._clients.leader(remote)
                if connection is None:
                    break  # its leader is connected by the next fetch's turn, unlocked
                if p.inflight and self._routes.get(remote) is not connection:
                    # The target's leader moved under batches still in flight to the old
                    # one: the new leader's answer could come first and be matched
                    # against them. The next batch waits for their answers.
                    self._rerouted.add(key)
                    break
                self._routes[remote] = connection
                parts = self._clients.restamped(remote, batch.view)
                while len(rounds) <= k:
                    rounds.append({})
                    bodies.append({})
                sent = rounds[k].setdefault(connection, Sent(connection, -1, 0))
                sent.batches[remote] = (p, batch)
                body = bodies[k].setdefault(connection, {})
                body.setdefault(p.remote, []).append((p.partition, parts))
                p.sent_batch(batch.first, batch.last, batch.count, len(batch.view),
                             batch.max_timestamp)  # fmt: skip
                position, k = batch.last + 1, k + 1
                if not p.established:
                    break  # its first batch under this producer: acknowledged first
            else:
                position = max(position, after)  # past markers and aborted batches too
            self._fetch_at[key] = (p, position)
        if not errors:
            self._poll_error = None
        self._send(plan, rounds, bodies)

    def _send(
        self,
        plan: UnitPlan,
        rounds: list[dict[Connection, Sent]],
        bodies: list[dict[Connection, dict[str, list[tuple[int, list[Buffer]]]]]],
    ) -> None:
        """Send the Produce requests, round k carrying each partition's k-th batch, each
        under a valid lease and within :data:`WINDOW` per broker (lock held)."""
        timeout_ms = clients.size_of(plan.producer, "request.timeout.ms", 5_000)
        for round_, body in zip(rounds, bodies, strict=True):
            for connection, sent in round_.items():
                while sum(s.connection is connection for s in self._sent) >= WINDOW:
                    self._serve(0.01)
                    if self._failure is not None:
                        return
                    # The control thread reports meanwhile (it only reads and confirms).
                    self.lock.release()
                    try:
                        time.sleep(0.0005)
                    finally:
                        self.lock.acquire()
                if time.monotonic_ns() >= self.lease.deadline_ns:
                    message = f"the lease of {self.flow} ran out in this slot while copying"
                    self._break("lease", None, -1, message)
                    return
                request = produce_request(body[connection], timeout_ms=timeout_ms)
                # Bytes the socket does not take now are written by later pump turns
                # (a Fetch's wait, a metadata refresh): never once the lease ran out.
                connection.write_by = self._lease_deadline
                try:
                    sent.correlation = connection.send(PRODUCE, request)
                except WireError as exc:
                    self._break("transient", None, -1, on_target(plan.target, exc))
                    return
                sent.deadline_ns = time.monotonic_ns() + self._write_timeout_ns
                self._sent.append(sent)

    def _serve(self, timeout: float = 0) -> None:
        """Take the Produce answers that came (lock held), waiting up to ``timeout``."""
        if not self._sent:
            return
        try:
            self._clients.pump.turn(timeout)
        except WireError as exc:
            # A broken source connection would stop every turn here: let it go (the next
            # fetch connects again). A broken target is found below, on its answers.
            if self._clients.source is not None and self._clients.source.broken:
                self._poll_error = f"reading {self.desired.source}: {exc}"
                self._clients.close_source()
        now_ms = time.time_ns() // 1_000_000
        for sent in list(self._sent):
            if self._failure is not None:
                return
            try:
                answer = sent.connection.answer(sent.correlation)
            except WireError as exc:
                self._break("transient", None, -1, on_target(self.desired.target, exc))
                return
            if answer is None:
                if time.monotonic_ns() > sent.deadline_ns:
                    late = f"broker {sent.connection.broker}: no answer to a Produce within"
                    late += " the write timeout"
                    self._break("transient", None, -1, on_target(self.desired.target, late))
                    return
                continue
            self._sent.remove(sent)
            self._landed(sent, answer, now_ms)

    def _landed(self, sent: Sent, answer: memoryview, now_ms: int) -> None:
        """A Produce answer: each batch landed where planned, or the unit breaks."""
        if (broken := sent.land(answer, now_ms, self.desired.target)) is not None:
            if broken[0] == "poison":
                self._refused.add(broken[1], broken[2])
            self._break(*broken)

    def _follow_settings(self, plan: UnitPlan) -> None:
        """New client settings (lock held): the source is connected again at once; the
        target, with a new producer, once nothing is in flight."""
        if plan.consumer != self._consumer_settings:
            self._consumer_settings = plan.consumer
            self._clients.close_source()
        if plan.producer != self._producer_settings and not self._sent:
            self._producer_settings = plan.producer
            self._close_target()

    def _break(
        self, kind: str, key: Key | None, offset: int, message: str, error_class: str | None = None
    ) -> None:
        """FlowUnit's break, and this unit's producer let go: the target connections
        closed, every batch in flight of unknown fate (lock held)."""
        first = self._failure is None
        super()._break(kind, key, offset, message, error_class)
        if first:
            self._close_target()

    def _close(self) -> None:
        """Stop every partition, let what was sent land (bounded), close the clusters."""
        with self.lock:
            for p in self._parts.values():
                p.stop()
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline:
            with self.lock:
                if not self._sent or self._failure is not None:
                    break
                self._serve(0.05)
        with self.lock:
            if self._sent:
                self._break("transient", None, -1, "copies still unacknowledged at stop")
            self._close_target()
            self._clients.close_source()

    # -- fetching ------------------------------------------------------------------------

    def _fetch(self, plan: UnitPlan) -> list[FetchedPartition]:
        """Connect what is missing, then fetch each sending partition at its position
        (the lock let go while brokers answer)."""
        with self.lock:
            wanted: list[tuple[str, int, int]] = []
            remotes: set[Key] = set()
            for key, p in self._parts.items():
                if p.state != SENDING:
                    continue
                remotes.add((p.remote, p.partition))
                if p.inflight and (not p.established or key in self._rerouted):
                    continue  # after its first batch (or those to an old leader) is answered
                self._rerouted.discard(key)
                at = self._fetch_at.get(key)
                if at is None or at[0] is not p:
                    at = self._fetch_at[key] = (p, p.next_send)
                wanted.append((key[0], key[1], at[1]))
            busy = bool(self._sent)
        self._clients.prepare(
            plan.consumer, self._producer_settings, {(t, p) for t, p, _ in wanted}, remotes
        )
        if not wanted:
            with self.lock:
                self._serve(0.005)
            return []
        return self._clients.fetch(wanted, plan.consumer, _BUSY_WAIT_MS if busy else plan.poll_ms)

    def _fetch_refused(self, plan: UnitPlan, p: PartitionCopy, answer: FetchedPartition) -> None:
        """A partition's Fetch error (lock held): a leader that moved is looked up again
        before the next Fetch; an offset out of range stops the partition (the driver
        decides); anything else is said in the report and fetched again."""
        error = BrokerError("(source)", "Fetch", answer.error, f"of {p.topic}-{p.partition}")
        if answer.error == _OUT_OF_RANGE:
            gone = f"offset {p.next_send} is no longer (or not yet) in the source partition"
            why = failure("out_of_range", gone, topic=p.topic, partition=p.partition,
                          offset=p.next_send)  # fmt: skip
            self._held.stop_one(self._ends, p.key, why)  # type: ignore[arg-type]
        elif answer.error in _MOVED:
            self._clients.forget_leaders(p.topic)
        else:
            self._poll_error = f"reading {plan.source}: {error}"
        self._nudge()

    def _close_target(self) -> None:
        """Let this unit's producer go (:meth:`BatchClients.close_target`): every batch in
        flight is of unknown fate, and a new producer's first batch to each partition is
        acknowledged before more go there."""
        self._clients.close_target()
        self._sent.clear()
        self._routes.clear()
        self._rerouted.clear()
        for p in self._parts.values():
            p.established = False
            p.abandon()
