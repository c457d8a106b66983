"""The clients of a batch-copying unit (:mod:`srm_driver.copier.batch_unit`): its source
and target clusters on the slot's own protocol layer, served by one pump, and its
idempotent producer on the target (an id and epoch from InitProducerId, a sequence per
remote partition, counted from 0 for each new producer).

Nothing here decides what is copied: it connects, looks leaders up, fetches, re-stamps
and lets the producer go; :class:`Sent` is a Produce request in flight (with the check
of its answer, :meth:`Sent.land`) and :class:`FetchEnds` the unit's stand-in for a
consumer. Clusters are built by ``connect`` from a client's settings (the slot's root:
:func:`srm_driver.copier.clients.wire_cluster`). A source leader that moved is looked up
again before the next Fetch (:meth:`BatchClients.forget_leaders`); the target's leaders
are those of the producer's cluster, which is closed with it, and are connected by
:meth:`BatchClients.prepare`, never under the unit's lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from srm_driver.copier import clients
from srm_driver.copier.batch_rebuild import refused_size
from srm_driver.copier.batch_rules import Batch
from srm_driver.copier.failures import (
    WIRE_AUTHORIZATION_CODES,
    conflict,
    on_target,
    overtaken,
    wire_kind,
)
from srm_driver.copier.partition import PartitionCopy
from srm_driver.copier.wire.apis import FETCH
from srm_driver.copier.wire.batches import restamp
from srm_driver.copier.wire.cluster import Cluster
from srm_driver.copier.wire.connection import Connection
from srm_driver.copier.wire.errors import BrokerError, WireError, error_name
from srm_driver.copier.wire.fetch import (
    FetchedPartition,
    fetch_request,
    fetch_response,
    session_of,
)
from srm_driver.copier.wire.fetch_session import STARTS_OVER, FetchSession
from srm_driver.copier.wire.messages import READ_COMMITTED
from srm_driver.copier.wire.produce import Buffer, produce_response
from srm_driver.copier.wire.pump import Pump

Connect = Callable[[dict[str, str], Pump, float], Cluster]
_TOO_LARGE = frozenset({10, 18})  # MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE
Key = tuple[str, int]
# A unit's break: kind, partition, upstream offset, message, error class.
Break = tuple[str, Key, int, str, str | None]


class TargetFailed(Exception):
    """Connecting to the target cluster, looking its leaders up or getting a producer id
    failed (the cause is the wire layer's error, which names the broker)."""


class BatchClients:
    """See the module docstring. Used from the unit's copy loop thread only."""

    def __init__(self, connect: Connect = clients.wire_cluster) -> None:
        self._connect = connect
        self.pump = Pump()
        self.source: Cluster | None = None
        self.target: Cluster | None = None
        self.producer: tuple[int, int] | None = None
        self._sequences: dict[Key, int] = {}
        self._looked_up: set[str] = set()  # source topics whose leaders are known
        self._named: set[Key] = set()  # source partitions the last refresh named a leader of
        self._reached: set[Key] = set()  # remote partitions whose leader is connected
        self._sessions: dict[Connection, FetchSession] = {}  # the source leaders' fetch sessions

    def prepare(
        self,
        consumer: Mapping[str, str],
        producer: Mapping[str, str],
        sources: set[Key],
        remotes: set[Key],
    ) -> None:
        """Connect what is missing (the clusters, and the leaders of the ``remotes``
        partitions), look up the leaders of ``sources`` partitions not known yet (a topic
        not looked up, a partition added to a topic since), and get a producer
        id when there are remote partitions to write (this waits for brokers: call it
        without the unit's lock). A failure on the target is :class:`TargetFailed`; a
        source connection that broke meanwhile (the pump serves it while the target's
        answers are waited for) raises its own error, as a failed fetch does."""
        timeout = clients.size_of(producer, "request.timeout.ms", 5_000) / 1000
        if self.source is None:
            self.source = self._connect(dict(consumer), self.pump, timeout)
            self._looked_up = set()
        topics, fresh, source = {topic for topic, _ in sources}, sources - self._named, self.source
        if topics <= self._looked_up and all(source.leader_known(*key) for key in fresh):
            self._named |= fresh
        else:
            source.refresh(sorted(topics))
            self._looked_up = topics
            self._named = {key for key in sources if source.leader_known(*key)}
        try:
            if self.target is None:
                self.target = self._connect(dict(producer), self.pump, timeout)
            target = self.target
            # A new remote topic, or a partition the metadata does not name (added to
            # the topic since) or names without a leader: look the leaders up again.
            if not all(target.leader_known(*remote) for remote in remotes):
                self._reached = set()  # the leaders may have moved
                target.refresh(sorted({topic for topic, _ in remotes}))
            for remote in remotes - self._reached:
                target.leader(*remote)
                self._reached.add(remote)
            if self.producer is None and remotes:
                self.producer = target.init_producer_id()
        except (WireError, BrokerError, ValueError) as exc:
            if self.source is not None and self.source.broken:
                # The pump serves every connection while the target's answers are
                # waited for: this is the source's break, for the source's handler.
                raise
            raise TargetFailed(exc) from exc

    def forget_leaders(self, topic: str) -> None:
        self._looked_up.discard(topic)
        self._named = set()

    def fetch(
        self, wanted: list[tuple[str, int, int]], consumer: Mapping[str, str], max_wait_ms: int
    ) -> list[FetchedPartition]:
        """One Fetch per source leader of ``wanted`` (topic, partition, offset), in flight
        together, each in that broker's fetch session (:mod:`.wire.fetch_session`: only
        what changed is named, only what has news is answered); their answers (the pump
        serves the target meanwhile)."""
        source = self.source
        assert source is not None
        by_leader: dict[Connection, dict[Key, int]] = {}
        # A broker answers with at least the first batch of the first partition however
        # large: turning the order lets each partition be first in its turn (a session's
        # broker moves the partitions it answered with records to the end itself).
        turn = int(time.monotonic() * 10) % len(wanted)
        for topic, partition, offset in wanted[turn:] + wanted[:turn]:
            by_leader.setdefault(source.leader(topic, partition), {})[(topic, partition)] = offset
        sessions = self._sessions = {c: self._sessions.get(c) or FetchSession() for c in by_leader}
        requests = []
        for leader, offsets in by_leader.items():
            session_id, epoch, named, forgotten = sessions[leader].request(offsets)
            topics: dict[str, list[tuple[int, int]]] = {}
            for topic, partition, offset in named:
                topics.setdefault(topic, []).append((partition, offset))
            body = fetch_request(
                topics,
                max_wait_ms=max_wait_ms,
                min_bytes=1,
                max_bytes=clients.size_of(consumer, "fetch.max.bytes", 16 << 20),
                partition_max_bytes=clients.size_of(consumer, "max.partition.fetch.bytes", 4 << 20),
                isolation=READ_COMMITTED if read_committed(consumer) else 0,
                session=(session_id, epoch),
                forgotten=forgotten,
            )
            try:
                requests.append((leader, leader.send(FETCH, [body])))
            except Exception:
                self._sessions = {}  # requests that may or may not have gone out
                raise
        fetched: list[FetchedPartition] = []
        for leader, correlation in requests:
            session = sessions[leader]
            try:
                view = self.pump.wait(leader, correlation, source.timeout)
                error, answers = fetch_response(view)
            except Exception:
                # Answers not read (this one, and those after it) may have said what the
                # sessions will not say again: every broker is fetched in full next.
                self._sessions = {}
                raise
            if error:
                session.reset()  # the next Fetch to this broker names everything again
                if error in STARTS_OVER:
                    continue
                raise BrokerError(leader.broker, "Fetch", error)
            fetched.extend(session.answered(session_of(view), answers))
        return fetched

    def leader(self, remote: Key) -> Connection | None:
        """The connection to ``remote``'s leader, as the target's metadata says, if
        :meth:`prepare` opened it (None: not yet). It never waits for a broker, so it
        may be called under the unit's lock."""
        assert self.target is not None
        return self.target.open_leader(*remote)

    def restamped(self, remote: Key, batch: memoryview) -> list[Buffer]:
        """``batch`` re-stamped for the producer's next sequence on ``remote``."""
        assert self.producer is not None
        sequence = self._sequences.get(remote, 0)
        header, rest, self._sequences[remote] = restamp(batch, *self.producer, sequence)
        return [header, rest]

    def close_source(self) -> None:
        if self.source is not None:
            self.source.close()
            self.source = None
        self._sessions = {}

    def close_target(self) -> None:
        """Let the producer go with its connections: anything not yet written to a
        socket is never sent; the next send gets a new producer id."""
        if self.target is not None:
            self.target.close()
            self.target = None
        self.producer = None
        self._reached = set()
        self._sequences.clear()

    def broken_target(self) -> bool:
        return self.target is not None and self.target.broken

    def close(self) -> None:
        self.close_target()
        self.close_source()


class FetchEnds:
    """What :class:`~srm_driver.copier.assignment.Assignment` asks of a consumer, for a
    unit that fetches by itself: each partition is fetched from its own position, so
    assigning, pausing and seeking change nothing here; a partition's end is what its
    last fetch answer said."""

    def __init__(self) -> None:
        self.ends: dict[Key, int] = {}

    def get_watermark_offsets(self, tp: Any, cached: bool = True) -> tuple[int, int]:
        return -1, self.ends.get((tp.topic, tp.partition), -1)

    def _nothing(self, *_: Any) -> None:
        return None

    assign = incremental_assign = incremental_unassign = pause = resume = seek = _nothing
    close = _nothing


@dataclass(slots=True)
class Sent:
    """A Produce request in flight: its batches by remote partition (the partition and
    the batch as sent, before re-stamping)."""

    connection: Connection
    correlation: int
    deadline_ns: int
    batches: dict[Key, tuple[PartitionCopy, Batch]] = field(default_factory=dict)

    def land(self, answer: memoryview, now_ms: int, alias: str) -> Break | None:
        """Its answer: each batch landed where planned (None), or the unit's break
        (kind, partition, upstream offset, message, error class): a refusal, an answer
        that overtook an older batch of its partition, or another writer (``conflict``).
        A refused authorization names the target cluster ``alias`` and its ACLs."""
        for produced in produce_response(answer):
            entry = self.batches.get((produced.topic, produced.partition))
            if entry is None or not entry[0].inflight:
                continue
            p, batch = entry
            count, up = batch.count, batch.first
            if produced.error:
                p.failed()
                said = [produced.message] if produced.message else []
                said += [f"record {index}: {text}" for index, text in produced.record_errors]
                where = f"to {p.remote}-{p.partition}"
                error = BrokerError(self.connection.broker, "Produce", produced.error, where,
                                    "; ".join(said) or None)  # fmt: skip
                text = str(error)
                if produced.error in WIRE_AUTHORIZATION_CODES:
                    text = on_target(alias, error)
                elif produced.error in _TOO_LARGE:
                    text += refused_size(batch)
                return wire_kind(produced.error), p.key, up, text, error_name(produced.error)
            if p.inflight[0][0] != up:
                # Answered before an older batch of the partition, sent to another broker:
                # its place cannot be checked here, and is not another writer's doing.
                text = overtaken(self.connection.broker, p.remote, p.partition)
                return "transient", p.key, up, text, None
            if not p.land_batch(produced.base_offset, count, now_ms):
                expected = p.inflight[0][1]
                p.failed()
                text = conflict(p.remote, p.partition, up, produced.base_offset, expected)
                return "conflict", p.key, up, text, None
            p.established = True
        return None


def read_committed(consumer: Mapping[str, str]) -> bool:
    return consumer.get("isolation.level") != "read_uncommitted"
