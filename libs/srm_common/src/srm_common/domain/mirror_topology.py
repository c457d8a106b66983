"""What a cluster's topic names and checkpoint records say about replication: pure.

MM2's ``MirrorClient`` / ``RemoteClusterUtils`` answers, worked out from a list of topic
names and the (key, value) pairs of a checkpoints topic; the adapter
(:mod:`srm_common.adapters.mirror_client`) reads those from a cluster and asks here. The
worked example of a topology is in that module's docstring.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, NoReturn

from srm_common.domain.policy import ReplicationPolicy
from srm_common.domain.records import Checkpoint
from srm_common.errors import ConfigError, RecordFormatError

_MAX_HOPS: Final = 256  # far beyond any real topology; only a broken policy gets here
_POLICY_KEY: Final = "replication.policy.class"

CheckpointKey = tuple[str, str, int]
"""(group, downstream topic, partition): what compaction of a checkpoints topic keeps."""


def heartbeat_topics_among(policy: ReplicationPolicy, topics: Iterable[str]) -> set[str]:
    """The heartbeat topics at any hop: ``heartbeats``, ``A.heartbeats``, ``B.A.heartbeats``."""
    return {topic for topic in topics if policy.is_heartbeats_topic(topic)}


def checkpoint_topics_among(policy: ReplicationPolicy, topics: Iterable[str]) -> set[str]:
    """The checkpoints topics: ``A.checkpoints.internal`` for every alias ``A``."""
    return {topic for topic in topics if policy.is_checkpoints_topic(topic)}


def is_remote_topic(policy: ReplicationPolicy, topic: str) -> bool:
    """Not internal and with a source under the policy (``A.orders``, ``A.heartbeats``).

    Under the default policy any name with the separator counts (``my.topic``: source
    ``my``), as in MM2.
    """
    return not policy.is_internal_topic(topic) and policy.topic_source(topic) is not None


def remote_topics_among(
    policy: ReplicationPolicy, topics: Iterable[str], source: str | None = None
) -> set[str]:
    """Remote topics; with ``source``, only those copied directly from it (one hop).

    ``{"A.orders", "B.A.orders", "orders", "A.checkpoints.internal"}`` gives
    ``{"A.orders", "B.A.orders"}``, and with ``source="A"`` only ``{"A.orders"}``.
    """
    return {
        topic
        for topic in topics
        if is_remote_topic(policy, topic)
        and (source is None or policy.topic_source(topic) == source)
    }


def sources_of(policy: ReplicationPolicy, topic: str) -> list[str]:
    """The aliases on the topic's path, nearest first: ``C.B.A.heartbeats`` -> C, B, A.

    Stops at the first alias seen twice (``A.B.A.C.heartbeats`` -> A, B: a policy such as
    Identity can name loops), at a local name and at a ``None`` upstream.
    """
    found: list[str] = []
    current: str | None = topic
    while current is not None:
        source = policy.topic_source(current)
        if source is None or source in found:
            break
        found.append(source)
        if len(found) > _MAX_HOPS:
            _broken_policy(policy, topic)
        current = policy.upstream_topic(current)
    return found


def hops_to(policy: ReplicationPolicy, topic: str, alias: str) -> int | None:
    """Hops from ``alias`` to here along ``topic``: ``B.A.heartbeats`` is 2 from A, 1 from B.

    ``None`` when ``alias`` is not on the path before a local name or a repeated alias.
    """
    path = sources_of(policy, topic)
    return path.index(alias) + 1 if alias in path else None


def upstream_clusters_among(policy: ReplicationPolicy, topics: Iterable[str]) -> set[str]:
    """Every alias on the path of a heartbeat topic: ``B.A.heartbeats`` -> {B, A}."""
    return {
        alias
        for topic in heartbeat_topics_among(policy, topics)
        for alias in sources_of(policy, topic)
    }


def replication_hops_among(
    policy: ReplicationPolicy, topics: Iterable[str], alias: str
) -> int | None:
    """The fewest hops from ``alias`` over the heartbeat topics; ``None`` if none leads here.

    ``{"A.heartbeats", "B.A.heartbeats"}``: 1 from A, 1 from B, ``None`` from C.
    """
    hops = [
        count
        for topic in heartbeat_topics_among(policy, topics)
        if (count := hops_to(policy, topic, alias)) is not None
    ]
    return min(hops, default=None)


@dataclass
class CheckpointFold:
    """Checkpoint records folded in offset order: the last per key wins, bad ones skipped.

    ``groups`` limits the fold to those groups (``None``: every group). ``skipped`` counts
    records that are not checkpoints (MM2 skips them too and goes on).
    """

    groups: frozenset[str] | None = None
    latest: dict[CheckpointKey, Checkpoint] = field(default_factory=dict)
    skipped: int = 0

    def add(self, key: bytes | None, value: bytes | None) -> None:
        try:
            checkpoint = Checkpoint.decode(key, value)
        except RecordFormatError:
            self.skipped += 1  # the reader logs the count once (MM2 skips them too)
            return
        if self.groups is None or checkpoint.consumer_group_id in self.groups:
            key_of = (checkpoint.consumer_group_id, checkpoint.topic, checkpoint.partition)
            self.latest[key_of] = checkpoint

    def in_key_order(self) -> dict[CheckpointKey, Checkpoint]:
        """The latest checkpoints, ordered by (group, topic, partition)."""
        return {key: self.latest[key] for key in sorted(self.latest)}


def fold_checkpoints(
    records: Iterable[tuple[bytes | None, bytes | None]], groups: Collection[str] | None = None
) -> CheckpointFold:
    """Fold (key, value) pairs of a checkpoints topic, oldest first; see :class:`CheckpointFold`."""
    fold = CheckpointFold(None if groups is None else frozenset(groups))
    for key, value in records:
        fold.add(key, value)
    return fold


def offsets_of(
    checkpoints: Mapping[CheckpointKey, Checkpoint], group: str
) -> dict[tuple[str, int], int]:
    """``{(downstream topic, partition): downstream offset}`` of ``group``: where it resumes."""
    return {
        (topic, partition): checkpoint.downstream_offset
        for (owner, topic, partition), checkpoint in checkpoints.items()
        if owner == group
    }


def _broken_policy(policy: ReplicationPolicy, topic: str) -> NoReturn:
    raise ConfigError(
        f"replication policy {policy!r} names more than {_MAX_HOPS} clusters on the path of"
        f" {topic!r}: upstream_topic must reach a local name",
        key=_POLICY_KEY,
    )
