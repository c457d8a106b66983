"""Progress per upstream partition in ``mm2-offsets.<source>.internal`` on the target.

Same topic, key bytes and partitioning as MM2's Connect offset store (murmur2 of the key,
so a Java producer would pick the same partition), so each key's records stay in order
in one partition and compaction keeps the latest. The value is
:class:`srm_common.domain.progress.Progress`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from srm_common.adapters.kafka_reader import read_partitions
from srm_common.domain.connect_offsets import decode_source_offset, source_offset_key
from srm_common.domain.policy import mm2_offsets_topic
from srm_common.domain.progress import Progress
from srm_common.errors import RecordFormatError

from srm_driver.internal_writer import InternalWriter
from srm_driver.kafka_admin import KafkaAdminError, create_topic

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]
CONNECT_OFFSETS_PARTITIONS = 25  # Connect's offset.storage.partitions default


class ProgressStore:
    """Reads all progress of one source cluster once, then writes updates synchronously.

    The composition root hands in the target's ``admin``, the ``writer`` of
    ``mm2-offsets.<source>.internal`` (partitioned by key) and the keys of the consumer
    that reads it back (:func:`srm_common.adapters.kafka_reader.read_partitions`)."""

    def __init__(
        self,
        source_alias: str,
        *,
        admin: AdminClient,
        writer: InternalWriter,
        consumer_config: Mapping[str, str],
        partitions: int = CONNECT_OFFSETS_PARTITIONS,
        replication_factor: int = -1,
    ) -> None:
        self.source_alias = source_alias
        self.topic = mm2_offsets_topic(source_alias)
        if writer.topic != self.topic:
            raise ValueError(f"progress of {source_alias} goes to {self.topic}, not {writer.topic}")
        self._admin = admin
        self._consumer_config = dict(consumer_config)
        self._partitions = partitions
        self._replication_factor = replication_factor
        self._writer = writer

    def ensure_topic(self) -> None:
        create_topic(
            self._admin,
            self.topic,
            partitions=self._partitions,
            replication_factor=self._replication_factor,
            config={"cleanup.policy": "compact"},
        )

    def load(self, timeout: float = 60.0) -> dict[TopicPartitionKey, Progress]:
        """Latest progress of every upstream partition of the source, read to the end."""
        found: dict[TopicPartitionKey, Progress] = {}
        partitions = self._partitions_now(timeout)
        for message in read_partitions(
            self._consumer_config,
            {(self.topic, p): 0 for p in partitions},
            what=f"reading progress from {self.topic}",
            timeout=timeout,
        ):
            self._take(found, message.key(), message.value())
        return found

    def _partitions_now(self, timeout: float) -> list[int]:
        try:
            metadata = self._admin.list_topics(self.topic, timeout=timeout).topics.get(self.topic)
        except KafkaException as exc:
            raise KafkaAdminError(f"cannot read progress from {self.topic}: {exc}") from exc
        if metadata is None or metadata.error is not None:
            return []
        return sorted(metadata.partitions)

    def _take(
        self, found: dict[TopicPartitionKey, Progress], key: bytes | None, value: bytes | None
    ) -> None:
        if key is None:
            return
        try:
            offset = decode_source_offset(key, value)
            if offset is None or offset.cluster != self.source_alias:
                return
            where = (offset.topic, offset.partition)
            if value is None:
                found.pop(where, None)  # an offsets reset: start from the beginning
            else:
                found[where] = Progress.decode_value(value)
        except RecordFormatError as exc:
            log.warning("ignoring a record of %s that is not progress: %s", self.topic, exc)

    def write(self, updates: Iterable[tuple[TopicPartitionKey, Progress]]) -> None:
        """Write and wait for every acknowledgement; raises if any write failed."""
        self._writer.write(
            (source_offset_key(self.source_alias, topic, partition), progress.encode_value())
            for (topic, partition), progress in updates
        )

    def close(self) -> None:
        self._writer.close()
