"""Which of some topics a cluster has, with their partition counts, at a cost that follows
the topics asked, not the cluster.

A driver keeping 1,000 remote topics in step looked at the whole cluster's metadata
(10,000 partition entries, built into Python objects) several times a pass while a few of
its topics were still missing. :func:`list_topics_of` asks up to :data:`BY_NAME_AT_MOST`
topics by name in one request, and lists the whole cluster only for more.

A topic the metadata shows with a transient error (``LEADER_NOT_AVAILABLE`` right after
its creation, a broker still loading it) exists: it is *unsettled*, neither missing (to
be created again, which the controller answers "already exists") nor counted (its
partitions are not known yet). Any other error is taken as the topic being absent, so
that creating it reports what is wrong.

:func:`topic_ids` says which topic a name stands for now (Kafka's topic id). Both ask a
cluster that did not answer for metadata first (``srm_common.adapters.answering``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass, field
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient
from srm_common.adapters import answering
from srm_common.adapters.topic_ids import checked_topic_id

from srm_driver.kafka_admin import TIMEOUT_S, KafkaAdminError

_T = TypeVar("_T")

# Up to this many topics are asked for by name (one request); more with one listing.
BY_NAME_AT_MOST = 200

# Errors of a topic that exists but is not ready to be counted yet.
_TRANSIENT = frozenset(
    {
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.REPLICA_NOT_AVAILABLE,
        KafkaError.UNKNOWN_LEADER_EPOCH,
    }
)


@dataclass(frozen=True)
class TopicListing:
    """Topics as a cluster's metadata shows them: ``counts`` (partitions) of those listed
    cleanly; ``unsettled``, those listed with a transient error (they exist)."""

    counts: dict[str, int] = field(default_factory=dict)
    unsettled: frozenset[str] = frozenset()

    def has(self, name: str) -> bool:
        return name in self.counts or name in self.unsettled


def list_topics_of(
    admin: AdminClient, names: Collection[str] | None = None, *, timeout: float = TIMEOUT_S
) -> TopicListing:
    """``names`` as the cluster has them (None: every topic of the cluster); a name the
    cluster does not have is in neither part of the answer."""
    if names is not None and len(names) <= BY_NAME_AT_MOST:
        return _described(admin, names, timeout)
    try:
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise KafkaAdminError(f"cannot list topics: {exc}; is the cluster reachable?") from exc
    wanted = None if names is None else set(names)
    counts: dict[str, int] = {}
    unsettled: set[str] = set()
    for name, topic in metadata.topics.items():
        if wanted is not None and name not in wanted:
            continue
        code = topic.error.code() if topic.error is not None else KafkaError.NO_ERROR
        if code == KafkaError.NO_ERROR:
            counts[name] = len(topic.partitions)
        elif code in _TRANSIENT:
            unsettled.add(name)
    return TopicListing(counts, frozenset(unsettled))


def _described(admin: AdminClient, names: Collection[str], timeout: float) -> TopicListing:
    """``names`` asked by name: one metadata request for all of them."""
    wanted = sorted(set(names))
    if not wanted:
        return TopicListing()
    return _describe(admin, wanted, timeout, _listing)


def _listing(futures: Mapping[str, Future[Any]], timeout: float) -> TopicListing:
    counts: dict[str, int] = {}
    unsettled: set[str] = set()
    for name, future in futures.items():
        try:
            counts[name] = len(future.result(timeout).partitions)
        except FutureTimeoutError as exc:
            raise KafkaAdminError(f"no answer about topic {name!r} within {timeout:g} s") from exc
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            code = error.code() if isinstance(error, KafkaError) else None
            if code in _TRANSIENT:
                unsettled.add(name)
            elif code is None or code < 0:
                # librdkafka's own (negative) codes: no answer about the topic (the broker
                # unreachable, a timeout). Read as "absent", a flow would let go of its
                # copying partitions; a broker's answer (no such topic, an invalid name)
                # still means the topic is not there.
                raise KafkaAdminError(f"cannot describe topic {name!r}: {exc}") from exc
    return TopicListing(counts, frozenset(unsettled))


def topic_ids(
    admin: AdminClient, names: Iterable[str], *, timeout: float = TIMEOUT_S
) -> dict[str, str | None]:
    """Kafka's topic id (base64 text) of each topic; None for a topic that does not exist.

    A deleted and recreated topic has a new id, which is how a copy tells it from the
    topic its progress belongs to."""
    wanted = sorted(set(names))
    if not wanted:
        return {}
    return _describe(admin, wanted, timeout, _ids)


def _ids(futures: Mapping[str, Future[Any]], timeout: float) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name, future in futures.items():
        try:
            found[name] = checked_topic_id(name, str(future.result(timeout).topic_id))
        except FutureTimeoutError as exc:
            raise KafkaAdminError(
                f"no answer about topic {name!r} within {timeout:g} s; is the cluster reachable?"
            ) from exc
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if isinstance(error, KafkaError) and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                found[name] = None
                continue
            raise KafkaAdminError(f"cannot describe topic {name!r}: {exc}") from exc
    return found


def _describe(
    admin: AdminClient,
    wanted: list[str],
    timeout: float,
    read: Callable[[Mapping[str, Future[Any]], float], _T],
) -> _T:
    """One DescribeTopics for ``wanted``, its answers read by ``read``; a cluster that did
    not answer the last request is asked for metadata first (a cluster down costs a core
    otherwise: ``srm_common.adapters.answering``), and whether this one was answered is
    noted for the next."""
    try:
        answering.check(admin, wanted[0], timeout)
        futures = admin.describe_topics(TopicCollection(wanted), request_timeout=timeout)
    except KafkaException as exc:
        raise KafkaAdminError(f"cannot describe topics: {exc}; is the cluster reachable?") from exc
    try:
        result = read(futures, timeout)
    except KafkaAdminError as exc:
        answering.noted(admin, exc.__cause__)
        raise
    answering.answered(admin)
    return result
