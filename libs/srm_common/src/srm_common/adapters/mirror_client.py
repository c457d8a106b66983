"""MM2's ``MirrorClient`` / ``RemoteClusterUtils`` calls in Python, on one (local) cluster.

What a cluster's topics say about replication, read exactly as MM2's Java client reads
them, so an application can fail over with either client and get the same answers:

* ``heartbeats``, ``us-west.heartbeats``, ``eu.us-west.heartbeats``: heartbeat topics; each
  prefix is a cluster the heartbeats came through, so they give the upstream clusters and
  the number of hops to each;
* ``us-west.checkpoints.internal``: the checkpoints of groups of ``us-west``, translated to
  this cluster; :meth:`MirrorClient.translate_offsets` reads where a group of ``us-west``
  would resume here;
* ``us-west.orders``: remote topics (not internal, with a source under the policy).

Worked example, on a cluster ``C`` fed by ``A -> B -> C`` and ``B -> C`` (default policy)::

    topics of C                  sources (one hop each)    hops to A    hops to B
    heartbeats                   -                         -            -
    B.heartbeats                 B                         -            1
    B.A.heartbeats               B, A                      2            1
    upstream_clusters() = {A, B}; replication_hops("A") = 2; replication_hops("X") = None

    B.checkpoints.internal, partition 0, in offset order:
      (g, B.orders, 0) -> 40   (g, B.orders, 0) -> 55   <garbage>   (h, B.orders, 0) -> 9
    translate_offsets("B", "g") = {("B.orders", 0): 55}   (last wins, garbage skipped)

Deliberate differences from the Java client, each where Java would give a wrong answer
without saying so:

* A read that does not reach the end of the checkpoints topic within the timeout raises
  :class:`ClusterUnavailableError`; Java returns what it read so far.
* A missing checkpoints topic is "no checkpoints" (empty), at once; Java's consumer waits
  for the topic until its own API timeout and throws.
* Records our codec refuses are skipped; Java also refuses them except a value whose
  version is not 0 (Java reads it as version 0) and non-UTF-8 strings (Java substitutes
  U+FFFD). A null key or value, which MM2 never writes, is skipped; it stops Java.
* ``replication_hops`` returns ``None`` where Java returns -1.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Collection, Mapping
from typing import Final

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from srm_common.adapters import kafka_clients
from srm_common.domain.mirror_topology import (
    CheckpointFold,
    CheckpointKey,
    checkpoint_topics_among,
    heartbeat_topics_among,
    offsets_of,
    remote_topics_among,
    replication_hops_among,
    upstream_clusters_among,
)
from srm_common.domain.policy import DefaultReplicationPolicy, ReplicationPolicy
from srm_common.domain.records import CHECKPOINTS_PARTITION, Checkpoint
from srm_common.errors import ConfigError, SrmError, TransientError

_log = logging.getLogger(__name__)


class _LibrdkafkaLog:
    """Where confluent-kafka sends librdkafka's lines (a refused connection, each retry):
    at DEBUG, since every failure that matters reaches the caller as one error naming
    the cluster. confluent-kafka only calls ``log(level, format, *args)``."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger

    def log(self, _level: int, msg: str, *args: object) -> None:
        self._logger.debug(msg, *args)


_CLIENT_LOG = _LibrdkafkaLog(logging.getLogger(f"{__name__}.librdkafka"))

DEFAULT_TIMEOUT_S: Final = 30.0

KAFKA_INTERNAL_TOPICS: Final = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state"}
)
"""Topics the broker flags internal; Java's ``Admin.listTopics()`` leaves them out."""


# librdkafka reports an unreachable or silent cluster with these codes.
_UNAVAILABLE_CODES: Final = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._RESOLVE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NETWORK_EXCEPTION,
    }
)


class MirrorClientError(SrmError):
    """The local cluster answered, but refused or failed a read (authorization, ...)."""


class ClusterUnavailableError(MirrorClientError, TransientError):
    """The local cluster could not be reached, or not read to the end, within the timeout."""


# -- the client ---------------------------------------------------------------------------


ClientConfig = Mapping[str, str | int | float | bool]


class MirrorClient:
    """MM2's view of one cluster: heartbeats, checkpoints and remote topics found there.

    ``config`` is a librdkafka client configuration of the **local** cluster (at least
    ``bootstrap.servers``; security settings as for any client); ``policy`` the
    replication policy the replicators use (default: MM2's default policy). ``cluster``
    names the cluster in error messages (default: its bootstrap servers). Every call
    reads the cluster afresh; nothing is cached. Unreachable within ``timeout_s``:
    :class:`ClusterUnavailableError`; any other refusal: :class:`MirrorClientError`.
    """

    def __init__(
        self,
        config: ClientConfig,
        policy: ReplicationPolicy | None = None,
        *,
        cluster: str | None = None,
    ) -> None:
        if not config.get("bootstrap.servers"):
            raise ConfigError(
                "the mirror client needs the local cluster's bootstrap servers",
                key="bootstrap.servers",
            )
        self.config = dict(config)
        self.policy: ReplicationPolicy = policy or DefaultReplicationPolicy()
        self.bootstrap = str(config["bootstrap.servers"])
        self.cluster = cluster

    def __repr__(self) -> str:
        return f"MirrorClient({self._where()}, policy={self.policy!r})"

    def _where(self) -> str:
        if self.cluster:
            return f"cluster {self.cluster!r} ({self.bootstrap})"
        return f"the cluster at {self.bootstrap}"

    # -- topology ------------------------------------------------------------------------

    def topics(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> set[str]:
        """Every topic name of the cluster but Kafka's own (``__consumer_offsets``...)."""
        admin = kafka_clients.admin({**self.config, "logger": _CLIENT_LOG})
        try:
            metadata = admin.list_topics(timeout=timeout_s)
        except KafkaException as exc:
            raise self._failure("list the topics of", exc, timeout_s) from exc
        return {name for name in metadata.topics if name not in KAFKA_INTERNAL_TOPICS}

    def heartbeat_topics(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> set[str]:
        """``heartbeats`` and its remote copies (``A.heartbeats``, ``B.A.heartbeats``)."""
        return heartbeat_topics_among(self.policy, self.topics(timeout_s))

    def checkpoint_topics(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> set[str]:
        """``A.checkpoints.internal`` for each remote cluster ``A`` whose groups MM2 tracks."""
        return checkpoint_topics_among(self.policy, self.topics(timeout_s))

    def upstream_clusters(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> set[str]:
        """Aliases heartbeats came from, at any number of hops (``B.A.heartbeats``: B, A)."""
        return upstream_clusters_among(self.policy, self.topics(timeout_s))

    def replication_hops(self, alias: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> int | None:
        """Fewest hops from cluster ``alias`` to this one (``A -> B -> here`` is 2).

        ``None`` when no heartbeat topic shows a path (Java: -1): not replicated here, or
        no heartbeats copied yet.
        """
        return replication_hops_among(self.policy, self.topics(timeout_s), alias)

    def remote_topics(
        self, source: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> set[str]:
        """Topics copied here (not internal), or only those copied directly from ``source``."""
        return remote_topics_among(self.policy, self.topics(timeout_s), source)

    # -- checkpoints ---------------------------------------------------------------------

    def checkpoints(
        self,
        remote_alias: str,
        groups: Collection[str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> dict[CheckpointKey, Checkpoint]:
        """The latest checkpoint per (group, downstream topic, partition) of ``remote_alias``.

        Reads partition 0 of ``policy.checkpoints_topic(remote_alias)`` from its start to
        the end it had when the read began; ``groups`` limits the result. Records that are
        not checkpoints are skipped (logged). A missing topic gives ``{}``.
        """
        topic = self.policy.checkpoints_topic(remote_alias)
        fold = CheckpointFold(None if groups is None else frozenset(groups))
        self._read_partition(topic, CHECKPOINTS_PARTITION, fold, timeout_s)
        if fold.skipped:
            _log.warning(
                "%s: skipped %d record(s) of %s that are not checkpoints",
                self._where(),
                fold.skipped,
                topic,
            )
        return fold.in_key_order()

    def translate_offsets(
        self, remote_alias: str, group: str, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> dict[tuple[str, int], int]:
        """Where ``group`` of ``remote_alias`` resumes here: ``{(topic, partition): offset}``.

        Topics are the local (downstream) names, offsets the latest checkpoint's
        downstream offset; MM2's ``RemoteClusterUtils.translateOffsets``. Empty when MM2
        wrote no checkpoint for the group (or no checkpoints topic exists). The metadata
        of each commit is in :meth:`checkpoints`.
        """
        return offsets_of(self.checkpoints(remote_alias, {group}, timeout_s), group)

    def _read_partition(
        self, topic: str, partition: int, fold: CheckpointFold, timeout_s: float
    ) -> None:
        """Feed every record of ``topic``/``partition`` up to its current end to ``fold``."""
        deadline = time.monotonic() + timeout_s
        consumer = kafka_clients.consumer(
            {
                # Java's consumer reads read_uncommitted and so does MM2's client; an
                # explicit isolation.level in the configuration wins.
                "isolation.level": "read_uncommitted",
                **self.config,
                "group.id": f"srm-mirror-client-{uuid.uuid4().hex}",  # nothing is committed
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "logger": _CLIENT_LOG,
            }
        )
        try:
            end = self._end_offset(consumer, topic, partition, deadline, timeout_s)
            if end is None:
                return
            consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
            last_error: KafkaError | None = None
            while time.monotonic() < deadline:
                for message in consumer.consume(500, min(0.5, _left(deadline))):
                    error = message.error()
                    if error is None:
                        fold.add(message.key(), message.value())
                        if message.offset() + 1 >= end:
                            return
                    elif error.code() == KafkaError._PARTITION_EOF:
                        return
                    elif error.fatal() or not error.retriable() and not _unavailable(error):
                        raise MirrorClientError(
                            f"cannot read {topic} on {self._where()}: {error.str()}"
                        )
                    else:
                        last_error = error  # librdkafka retries these itself
            raise ClusterUnavailableError(
                f"could not read {topic} on {self._where()} to its end (offset {end}) within"
                f" {timeout_s:g} s{_last(last_error)}; is the cluster up and reachable?"
            )
        finally:
            consumer.close()

    def _end_offset(
        self, consumer: Consumer, topic: str, partition: int, deadline: float, timeout_s: float
    ) -> int | None:
        """The partition's end offset now; ``None`` when the topic or partition is missing
        or holds no records."""
        try:
            metadata = consumer.list_topics(topic, timeout=_left(deadline))
        except KafkaException as exc:
            raise self._failure(f"read {topic} of", exc, timeout_s) from exc
        described = metadata.topics.get(topic)
        if described is None or (
            described.error is not None
            and described.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        ):
            return None
        if described.error is not None:
            raise self._failure(f"read {topic} of", KafkaException(described.error), timeout_s)
        if partition not in described.partitions:
            return None
        try:
            watermarks = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=_left(deadline)
            )
        except KafkaException as exc:
            raise self._failure(f"find the end of {topic} on", exc, timeout_s) from exc
        if watermarks is None:
            raise ClusterUnavailableError(
                f"{self._where()} did not say where {topic} ends within {timeout_s:g} s;"
                " is the cluster up and reachable?"
            )
        low, high = watermarks
        return high if high > low else None

    def _failure(self, doing: str, exc: KafkaException, timeout_s: float) -> MirrorClientError:
        error = exc.args[0] if exc.args else None
        if isinstance(error, KafkaError) and not _unavailable(error):
            return MirrorClientError(
                f"cannot {doing} {self._where()}: {error.str()}; check the client"
                " configuration (security settings, ACLs)"
            )
        return ClusterUnavailableError(
            f"cannot {doing} {self._where()} within {timeout_s:g} s ({exc}); is the cluster"
            " up, and are bootstrap.servers and the security settings right?"
        )


def _unavailable(error: KafkaError) -> bool:
    return error.code() in _UNAVAILABLE_CODES


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.001)


def _last(error: KafkaError | None) -> str:
    return f" (last error: {error.str()})" if error is not None else ""


# -- RemoteClusterUtils: one call, one client ---------------------------------------------


def heartbeat_topics(
    config: ClientConfig,
    policy: ReplicationPolicy | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> set[str]:
    """:meth:`MirrorClient.heartbeat_topics` of the cluster ``config`` reaches."""
    return MirrorClient(config, policy).heartbeat_topics(timeout_s)


def checkpoint_topics(
    config: ClientConfig,
    policy: ReplicationPolicy | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> set[str]:
    """:meth:`MirrorClient.checkpoint_topics` of the cluster ``config`` reaches."""
    return MirrorClient(config, policy).checkpoint_topics(timeout_s)


def upstream_clusters(
    config: ClientConfig,
    policy: ReplicationPolicy | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> set[str]:
    """:meth:`MirrorClient.upstream_clusters` of the cluster ``config`` reaches."""
    return MirrorClient(config, policy).upstream_clusters(timeout_s)


def replication_hops(
    config: ClientConfig,
    alias: str,
    policy: ReplicationPolicy | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> int | None:
    """:meth:`MirrorClient.replication_hops` of the cluster ``config`` reaches."""
    return MirrorClient(config, policy).replication_hops(alias, timeout_s)


def remote_topics(
    config: ClientConfig,
    source: str | None = None,
    policy: ReplicationPolicy | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> set[str]:
    """:meth:`MirrorClient.remote_topics` of the cluster ``config`` reaches."""
    return MirrorClient(config, policy).remote_topics(source, timeout_s)


def translate_offsets(
    config: ClientConfig,
    remote_alias: str,
    group: str,
    policy: ReplicationPolicy | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[tuple[str, int], int]:
    """:meth:`MirrorClient.translate_offsets` on the cluster ``config`` reaches."""
    return MirrorClient(config, policy).translate_offsets(remote_alias, group, timeout_s)
