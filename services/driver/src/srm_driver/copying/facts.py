"""What reconciling a flow's partitions reads from Kafka: topic ids, offsets, and the
records past a recorded position (to prove they are copies, not to guess)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from confluent_kafka import TIMESTAMP_CREATE_TIME, Message
from confluent_kafka.admin import AdminClient
from srm_common.adapters.kafka_reader import read_partitions
from srm_common.config.model import FlowConfig
from srm_common.domain.progress import PartitionFacts, Surplus

from srm_driver.kafka_admin import read_end_offsets, read_partition_offsets
from srm_driver.shared_target import last_copied_offset
from srm_driver.source_codecs import SourceCodecs
from srm_driver.topic_listing import topic_ids

TopicPartition = tuple[str, int]


class FlowFacts:
    """Reads the facts of one flow's partitions; blocks, raises ``KafkaAdminError``."""

    def __init__(self, flow: FlowConfig, source_admin: AdminClient, target_admin: AdminClient):
        self._flow = flow
        self._source_admin = source_admin
        self._target_admin = target_admin
        self._codecs = SourceCodecs(source_admin, flow.source_admin)

    def codecs(self, partitions: Mapping[str, Sequence[int]]) -> dict[str, str]:
        """The codec of each source topic (topic -> some of its partitions) that has one
        now (:mod:`srm_driver.source_codecs`)."""
        return self._codecs.find(partitions)

    def gather(
        self, routes: Mapping[TopicPartition, str]
    ) -> tuple[dict[TopicPartition, PartitionFacts], dict[TopicPartition, str]]:
        """Facts of each upstream partition in ``routes`` (upstream -> remote topic), in
        a few round trips for all of them, and the partitions whose offsets could not be
        read, with why (they wait; the others go on)."""
        source_ids = topic_ids(self._source_admin, {topic for topic, _ in routes})
        target_ids = topic_ids(self._target_admin, set(routes.values()))
        upstream = [tp for tp in routes if source_ids.get(tp[0]) is not None]
        remote = {tp: (routes[tp], tp[1]) for tp in routes if target_ids.get(routes[tp])}
        sources, failed = read_partition_offsets(self._source_admin, upstream, read_committed=False)
        targets, failed_targets = read_end_offsets(
            self._target_admin, remote.values(), read_committed=False
        )
        unreadable = {
            tp: f"cannot read the offsets of {self._flow.source}:{tp[0]}-{tp[1]}: {failed[tp]}"
            for tp in routes
            if tp in failed
        }
        for tp, where in remote.items():
            if where in failed_targets and tp not in unreadable:
                unreadable[tp] = (
                    f"cannot read the offsets of {self._flow.target}:{where[0]}-{where[1]}:"
                    f" {failed_targets[where]}"
                )
        facts = {}
        for tp, remote_topic in routes.items():
            if tp in unreadable:
                continue
            source = sources.get(tp)
            facts[tp] = PartitionFacts(
                source_topic_id=source_ids.get(tp[0]) if source else None,
                source_log_start=source.log_start if source else 0,
                source_end=source.end if source else 0,
                target_topic_id=target_ids.get(remote_topic) if tp in remote else None,
                target_end=targets.get(remote[tp], 0) if tp in remote else 0,
            )
        return facts, unreadable

    def remote_unready(self, routes: Mapping[TopicPartition, str]) -> dict[TopicPartition, str]:
        """The partitions of ``routes`` (upstream -> remote topic) whose remote partition
        still cannot be read, with why: one ListOffsets on the target for all of them.
        What partitions waiting for the target to load their remote partition are asked,
        instead of every fact again."""
        where = {tp: (remote, tp[1]) for tp, remote in routes.items()}
        _, failed = read_end_offsets(self._target_admin, where.values(), read_committed=False)
        return {
            tp: f"cannot read the offsets of {self._flow.target}:{w[0]}-{w[1]}: {failed[w]}"
            for tp, w in where.items()
            if w in failed
        }

    def topic_identities(
        self, topics: Mapping[str, str]
    ) -> dict[str, tuple[str | None, str | None]]:
        """(source topic id, remote topic id) of each source topic of ``topics`` (source
        topic -> remote topic); None: missing. One describe per cluster."""
        source_ids = topic_ids(self._source_admin, topics)
        target_ids = topic_ids(self._target_admin, set(topics.values()))
        return {
            topic: (source_ids.get(topic), target_ids.get(remote))
            for topic, remote in topics.items()
        }

    def compare(
        self, tp: TopicPartition, remote: str, start: int, downstream: int, count: int
    ) -> tuple[Surplus, list[tuple[int, int]]]:
        """Compare the ``count`` remote records from ``downstream`` with the source's
        records from ``start`` (read_committed, as the copy reads them). Returns what
        matched and the (upstream, downstream) pairs of the matched records."""
        copies = list(
            read_partitions(
                self._flow.target_consumer,
                {(remote, tp[1]): downstream},
                what=f"reading {self._flow.target}:{remote}-{tp[1]} to check it",
                limit=count,
            )
        )
        originals = list(
            read_partitions(
                self._flow.source_consumer,
                {tp: start},
                what=f"reading {self._flow.source}:{tp[0]}-{tp[1]} to check its copy",
                isolation="read_committed",
                limit=count,
            )
        )
        return match_copies(originals, copies, start)

    def last_copied(self, tp: TopicPartition, remote: str, start: int) -> int | None:
        """Shared remote partition: the upstream offset of our last copy from ``start``."""
        return last_copied_offset(
            self._flow.target_consumer, remote, tp[1], start=start, source_alias=self._flow.source
        )


def match_copies(
    originals: Sequence[Message], copies: Sequence[Message], start: int
) -> tuple[Surplus, list[tuple[int, int]]]:
    """How many leading ``copies`` are, in order, copies of ``originals``: same key,
    value, headers, and timestamp (unless the remote topic stamps its own append time)."""
    pairs: list[tuple[int, int]] = []
    next_upstream = start
    for original, copy in zip(originals, copies, strict=False):
        difference = _difference(original, copy)
        if difference is not None:
            return Surplus(len(pairs), next_upstream, difference), pairs
        pairs.append((original.offset(), copy.offset()))
        next_upstream = original.offset() + 1
    mismatch = None
    if len(copies) > len(originals):
        mismatch = f"remote offset {copies[len(originals)].offset()} has no source record to match"
    return Surplus(len(pairs), next_upstream, mismatch), pairs


def _difference(original: Message, copy: Message) -> str | None:
    where = f"remote offset {copy.offset()} vs source offset {original.offset()}"
    for name, left, right in (
        ("key", original.key(), copy.key()),
        ("value", original.value(), copy.value()),
        ("headers", _headers(original.headers()), _headers(copy.headers())),
    ):
        if left != right:
            return f"{where}: the {name} differs"
    copy_type, copy_time = copy.timestamp()
    if copy_type == TIMESTAMP_CREATE_TIME and copy_time != original.timestamp()[1]:
        return f"{where}: the timestamp differs"
    return None


def _headers(headers: Iterable[tuple[str, bytes | None]] | None) -> list[tuple[str, bytes | None]]:
    return list(headers or ())
