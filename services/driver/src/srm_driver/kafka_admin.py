"""Thin helpers over confluent-kafka's AdminClient: topics, partitions, offsets.

Everything here blocks with a timeout and raises :class:`KafkaAdminError` with the
cluster, the operation and what to check, instead of a bare ``KafkaException``.
librdkafka destroys a client whose last Python reference goes away even while its
futures are pending, so callers keep the client for as long as they use its results.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass
from typing import TypeVar

from confluent_kafka import (
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic, OffsetSpec
from srm_common.adapters import answering, kafka_clients
from srm_common.domain.metadata_batches import chunks, halves, is_too_large
from srm_common.errors import SrmError

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0
_I = TypeVar("_I")
_K = TypeVar("_K", bound=Hashable)
_T = TypeVar("_T")


class KafkaAdminError(SrmError):
    """An admin operation on a cluster failed."""


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """Where a partition starts and ends: ``log_start`` (earliest retained offset) and
    ``end`` (read_committed: the last stable offset; read_uncommitted: the high watermark)."""

    log_start: int
    end: int


def admin_client(config: Mapping[str, str]) -> AdminClient:
    """An AdminClient for the resolved client config of one cluster."""
    return kafka_clients.admin(dict(config))


def topic_partitions(admin: AdminClient, *, timeout: float = TIMEOUT_S) -> dict[str, int]:
    """Every topic of the cluster with its partition count (internal ``__*`` included)."""
    try:
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise KafkaAdminError(f"cannot list topics: {exc}; is the cluster reachable?") from exc
    return {
        name: len(topic.partitions)
        for name, topic in metadata.topics.items()
        if topic.error is None or topic.error.code() == KafkaError.NO_ERROR
    }


def create_topic(
    admin: AdminClient,
    name: str,
    *,
    partitions: int,
    replication_factor: int = -1,
    config: Mapping[str, str] | None = None,
    timeout: float = TIMEOUT_S,
) -> bool:
    """Create ``name``; False (and no error) when it already exists."""
    topic = NewTopic(
        name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        config=dict(config or {}),
    )
    future = admin.create_topics([topic], operation_timeout=timeout)[name]
    try:
        future.result(timeout)
    except FutureTimeoutError as exc:
        raise KafkaAdminError(
            f"cannot create topic {name!r}: no answer within {timeout:g} s"
        ) from exc
    except KafkaException as exc:
        if exc.args and exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise KafkaAdminError(f"cannot create topic {name!r}: {exc}") from exc
    wait_for_leaders(admin, [name], timeout=timeout)
    return True


def ensure_compacted_topic(
    admin: AdminClient,
    name: str,
    *,
    partitions: int = 1,
    replication_factor: int = -1,
    timeout: float = TIMEOUT_S,
) -> bool:
    """Create an internal topic as MM2 does (``cleanup.policy=compact``) unless it exists."""
    return create_topic(
        admin,
        name,
        partitions=partitions,
        replication_factor=replication_factor,
        config={"cleanup.policy": "compact"},
        timeout=timeout,
    )


def increase_partitions(
    admin: AdminClient, name: str, total: int, *, timeout: float = TIMEOUT_S
) -> None:
    """Grow ``name`` to ``total`` partitions (Kafka never shrinks a topic)."""
    future = admin.create_partitions([NewPartitions(name, total)], operation_timeout=timeout)[name]
    try:
        future.result(timeout)
    except (FutureTimeoutError, KafkaException) as exc:
        why = f"no answer within {timeout:g} s" if isinstance(exc, FutureTimeoutError) else exc
        raise KafkaAdminError(f"cannot grow topic {name!r} to {total} partitions: {why}") from exc


def partition_offsets(
    admin: AdminClient,
    partitions: Iterable[tuple[str, int]],
    *,
    read_committed: bool = True,
    timeout: float = TIMEOUT_S,
) -> dict[tuple[str, int], PartitionOffsets]:
    """Log start and end offsets of many partitions in two round trips."""
    found, failed = read_partition_offsets(
        admin, partitions, read_committed=read_committed, timeout=timeout
    )
    _raise_first(failed)
    return found


def read_partition_offsets(
    admin: AdminClient,
    partitions: Iterable[tuple[str, int]],
    *,
    read_committed: bool = True,
    timeout: float = TIMEOUT_S,
) -> tuple[dict[tuple[str, int], PartitionOffsets], dict[tuple[str, int], str]]:
    """Like :func:`partition_offsets`, but a partition that cannot be read (a topic just
    created, whose leader is not known yet) is returned among the failures, with why,
    instead of failing the thousands of others."""
    wanted = list(partitions)
    if not wanted:
        return {}, {}
    isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
    starts, failed = _list_offsets(admin, wanted, OffsetSpec.earliest(), isolation, timeout)
    ready = [tp for tp in wanted if tp in starts]
    ends, failed_ends = _list_offsets(admin, ready, OffsetSpec.latest(), isolation, timeout)
    found = {tp: PartitionOffsets(starts[tp], ends[tp]) for tp in ready if tp in ends}
    return found, {**failed, **failed_ends}


def end_offsets(
    admin: AdminClient,
    partitions: Iterable[tuple[str, int]],
    *,
    read_committed: bool = True,
    timeout: float = TIMEOUT_S,
) -> dict[tuple[str, int], int]:
    """End offsets only, in one round trip (the source task's every cycle)."""
    found, failed = read_end_offsets(
        admin, partitions, read_committed=read_committed, timeout=timeout
    )
    _raise_first(failed)
    return found


def read_end_offsets(
    admin: AdminClient,
    partitions: Iterable[tuple[str, int]],
    *,
    read_committed: bool = True,
    timeout: float = TIMEOUT_S,
) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], str]]:
    """End offsets, and the partitions that could not be read with why."""
    wanted = list(partitions)
    if not wanted:
        return {}, {}
    isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
    return _list_offsets(admin, wanted, OffsetSpec.latest(), isolation, timeout)


def _raise_first(failed: Mapping[tuple[str, int], str]) -> None:
    if failed:
        (topic, partition), reason = next(iter(failed.items()))
        more = f" (and {len(failed) - 1} more partitions)" if len(failed) > 1 else ""
        raise KafkaAdminError(f"cannot read offsets of {topic}-{partition}: {reason}{more}")


def _list_offsets(
    admin: AdminClient,
    partitions: list[tuple[str, int]],
    spec: OffsetSpec,
    isolation: IsolationLevel,
    timeout: float,
) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], str]]:
    """One ListOffsets for all ``partitions`` (librdkafka sends one request per leader);
    those that failed are asked once more after a metadata refresh. Returns what was
    read and, per partition that was not, why."""
    found: dict[tuple[str, int], int] = {}
    failed: dict[tuple[str, int], str] = {}
    for attempt in range(2):
        wanted = [tp for tp in partitions if tp not in found]
        if not wanted:
            break
        request = {TopicPartition(topic, partition): spec for topic, partition in wanted}
        try:
            # A cluster that answered none of the last requests is asked for metadata
            # first: one that is down costs librdkafka a core otherwise (answering).
            answering.check(admin, wanted[0][0], timeout)
            futures = admin.list_offsets(
                request, isolation_level=isolation, request_timeout=timeout
            )
        except answering.NoAnswer as exc:
            return found, {tp: str(exc) for tp in wanted}
        except KafkaException as exc:
            raise KafkaAdminError(f"cannot read offsets: {exc}; is the cluster reachable?") from exc
        failed = {}
        unanswered = 0
        for tp, future in futures.items():
            try:
                found[(tp.topic, tp.partition)] = future.result(timeout).offset
            except FutureTimeoutError:
                failed[(tp.topic, tp.partition)] = f"no answer within {timeout:g} s"
                unanswered += 1
            except KafkaException as exc:
                failed[(tp.topic, tp.partition)] = str(exc)
                unanswered += answering.unanswered(exc)
        if unanswered == len(wanted):
            answering.failed(admin)
        else:
            answering.answered(admin)
        if not failed or attempt:
            break
        # librdkafka answers from metadata cached for minutes; partitions added since
        # look leaderless until the topics' metadata is fetched again: by name for a
        # few topics, with one listing of the cluster for many, at most every
        # _LIST_EVERY_S per client (a cold start's waiting partitions fail reads every
        # 2 s, and a listing costs what the whole cluster holds, not what failed).
        topics = {topic for topic, _ in failed}
        try:
            if len(topics) <= _BY_NAME:
                for topic in topics:
                    admin.list_topics(topic, timeout=timeout)
            else:
                now = _clock()
                if now - _listed.get(admin, now - _LIST_EVERY_S) < _LIST_EVERY_S:
                    break  # listed a moment ago: those partitions wait for the next round
                _listed[admin] = now
                admin.list_topics(timeout=timeout)
        except KafkaException:
            pass
    return found, failed


def wait_for_leaders(admin: AdminClient, names: Iterable[str], *, timeout: float = 15.0) -> bool:
    """Wait until every partition of ``names`` has a leader (a new topic or partition
    answers NOT_LEADER_FOR_PARTITION for a moment); False if some still had none.

    A few topics are asked for by name; many (a thousand topics created in one round)
    with one metadata request for the whole cluster per look, not one per topic."""
    pending = set(names)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        try:
            if len(pending) <= _BY_NAME:
                found = {}
                for name in pending:
                    found.update(admin.list_topics(name, timeout=5).topics)
            else:
                found = admin.list_topics(timeout=5).topics
        except KafkaException:
            found = {}
        for name in list(pending):
            topic = found.get(name)
            if (
                topic is not None
                and topic.error is None
                and topic.partitions
                and all(p.leader >= 0 and not p.error for p in topic.partitions.values())
            ):
                pending.discard(name)
        if pending:
            time.sleep(0.1)
    return not pending


# Up to this many topics are waited for by name; more with one listing of the cluster.
_BY_NAME = 10
# A failed read lists the whole cluster at most this often per client (_list_offsets).
_LIST_EVERY_S = 5.0
_listed: weakref.WeakKeyDictionary[AdminClient, float] = weakref.WeakKeyDictionary()
_clock = time.monotonic


class RecordBudget:
    """How many metadata records one admin request to a cluster may generate, and the
    sending of many changes under it (:mod:`srm_common.domain.metadata_batches`).

    ``limit`` starts at the configured ``srm.admin.max.records``; when the cluster still
    refuses a request as too large, the request is split in halves and sent again, and
    ``limit`` drops to half of what was refused for every later request (a cluster with
    a lower cap than KRaft's default is learned once, not at every round)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.requests = 0  # requests sent, refused ones included

    def send(
        self,
        what: str,
        items: Sequence[_I],
        cost: Callable[[_I], int],
        key: Callable[[_I], _K],
        send: Callable[[list[_I]], Mapping[_K, Future[_T]]],
        *,
        timeout: float,
    ) -> dict[_K, Future[_T]]:
        """``send`` each chunk of ``items`` (``cost``: its records) one request after
        the other, each waited for up to ``timeout``; returns every item's finished
        future by ``key`` (a change refused alone keeps its refusal: the caller reports
        it, and the next round, under the lowered limit, makes it in steps)."""
        settled: dict[_K, Future[_T]] = {}
        queue = deque(chunks(items, cost, self.limit))
        while queue:
            chunk = queue.popleft()
            self.requests += 1
            answers = {k: _settle(f, timeout) for k, f in send(chunk).items()}
            refused = [item for item in chunk if _too_large(answers.get(key(item)))]
            refused_keys = {key(item) for item in refused}
            settled.update((k, answer) for k, answer in answers.items() if k not in refused_keys)
            if not refused:
                continue
            records = sum(max(1, cost(item)) for item in refused)
            self.limit = max(1, min(self.limit, records // 2))
            log.info(
                "%s: a request of %d records was refused as too large; at most %d records"
                " per request from now on",
                what,
                records,
                self.limit,
            )
            if len(refused) == 1:
                settled[key(refused[0])] = answers[key(refused[0])]
                continue
            first, second = halves(refused)
            queue.extendleft([second, first])
        return settled


def _settle(future: Future[_T], timeout: float) -> Future[_T]:
    """``future`` waited for: a finished future with its result or its error."""
    done: Future[_T] = Future()
    try:
        done.set_result(future.result(timeout))
    except (FutureTimeoutError, KafkaException) as exc:
        done.set_exception(exc)
    return done


def _too_large(future: Future[object] | None) -> bool:
    """The request was refused for the controller's cap on records per operation."""
    if future is None:
        return False
    error = future.exception()
    return isinstance(error, KafkaException) and is_too_large(str(error))
