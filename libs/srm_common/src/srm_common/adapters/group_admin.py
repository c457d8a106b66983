"""Consumer groups through the Admin API: committed offsets, activity, and setting them.

Used by the checkpoint tasks (reading groups on the source, syncing them on the target)
and by srm-control (offsets, failover, failback). Errors name the group and the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from srm_common.errors import SrmError

Key = tuple[str, int]
TIMEOUT_S = 15.0


def _why(exc: Exception) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {TIMEOUT_S:g} s (is the cluster up and reachable?)"
    return str(exc)


class GroupAdminError(SrmError):
    """A consumer group operation failed (the message says which and where)."""


@dataclass(frozen=True, slots=True)
class GroupActivity:
    """A group's state on one cluster (``EMPTY``, ``STABLE``, ``DEAD`` for none...)."""

    state: str
    members: int

    @property
    def active(self) -> bool:
        return self.members > 0


def committed_offsets(admin: AdminClient, group: str, *, where: str) -> dict[Key, int]:
    """The group's committed offsets (partitions with no commit left out)."""
    try:
        futures = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT_S
        )
        result = futures[group].result(TIMEOUT_S)
    except (KafkaException, TimeoutError) as exc:
        raise GroupAdminError(
            f"cannot read the offsets of group {group!r} on {where}: {exc}"
        ) from exc
    return {
        (tp.topic, tp.partition): tp.offset
        for tp in result.topic_partitions or ()
        if tp.error is None and tp.offset >= 0
    }


def activity(admin: AdminClient, group: str, *, where: str) -> GroupActivity:
    try:
        futures = admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)
        described = futures[group].result(TIMEOUT_S)
    except (KafkaException, TimeoutError) as exc:
        raise GroupAdminError(f"cannot describe group {group!r} on {where}: {_why(exc)}") from exc
    state = getattr(described.state, "name", str(described.state))
    return GroupActivity(state, len(described.members or ()))


def set_offsets(admin: AdminClient, group: str, offsets: Mapping[Key, int], *, where: str) -> None:
    """Commit ``offsets`` for the group; the broker refuses while it has members."""
    if not offsets:
        return
    request = ConsumerGroupTopicPartitions(
        group,
        [
            TopicPartition(topic, partition, offset)
            for (topic, partition), offset in offsets.items()
        ],
    )
    try:
        result = admin.alter_consumer_group_offsets([request], request_timeout=TIMEOUT_S)
        answer = result[group].result(TIMEOUT_S)
    except (KafkaException, TimeoutError) as exc:
        raise GroupAdminError(
            f"cannot set the offsets of group {group!r} on {where}: {_why(exc)}"
        ) from exc
    failed = [
        f"{tp.topic}-{tp.partition}: {tp.error}" for tp in answer.topic_partitions if tp.error
    ]
    if failed:
        raise GroupAdminError(
            f"cannot set the offsets of group {group!r} on {where}: {'; '.join(failed)}"
        )


class ClusterGroups:
    """The group operations above on one cluster, named for error messages."""

    def __init__(self, admin: AdminClient, alias: str) -> None:
        self._admin = admin
        self.alias = alias

    def committed(self, group: str) -> dict[Key, int]:
        return committed_offsets(self._admin, group, where=self.alias)

    def activity(self, group: str) -> GroupActivity:
        return activity(self._admin, group, where=self.alias)

    def set(self, group: str, offsets: Mapping[Key, int]) -> None:
        set_offsets(self._admin, group, offsets, where=self.alias)
