"""Progress per upstream partition in ``mm2-offsets.<source>.internal`` on the target.

Same topic, key bytes and partitioning as MM2's Connect offset store (murmur2 of the key,
so a Java producer would pick the same partition), so each key's records stay in order
in one partition and compaction keeps the latest. The value is
:class:`srm_common.domain.progress.Progress`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from srm_common.domain.connect_offsets import decode_source_offset, source_offset_key
from srm_common.domain.policy import mm2_offsets_topic
from srm_common.domain.progress import Progress
from srm_common.errors import RecordFormatError

from srm_driver.internal_writer import InternalWriter
from srm_driver.kafka_admin import KafkaAdminError, admin_client, create_topic

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]
CONNECT_OFFSETS_PARTITIONS = 25  # Connect's offset.storage.partitions default


class ProgressStore:
    """Reads all progress of one source cluster once, then writes updates synchronously."""

    def __init__(
        self,
        source_alias: str,
        target_admin_config: Mapping[str, str],
        target_producer_config: Mapping[str, str],
        target_consumer_config: Mapping[str, str],
        *,
        partitions: int = CONNECT_OFFSETS_PARTITIONS,
        replication_factor: int = -1,
    ) -> None:
        self.source_alias = source_alias
        self.topic = mm2_offsets_topic(source_alias)
        self._admin = admin_client(target_admin_config)
        self._consumer_config = dict(target_consumer_config)
        self._partitions = partitions
        self._replication_factor = replication_factor
        self._writer = InternalWriter(self.topic, target_producer_config, partition=None)

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
        consumer = Consumer(
            {
                **self._consumer_config,
                "group.id": f"srm-progress-reader-{self.source_alias}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_uncommitted",
            }
        )
        found: dict[TopicPartitionKey, Progress] = {}
        try:
            self._read_all(consumer, found, timeout)
        except KafkaException as exc:
            raise KafkaAdminError(f"cannot read progress from {self.topic}: {exc}") from exc
        finally:
            consumer.close()
        return found

    def _read_all(
        self, consumer: Consumer, found: dict[TopicPartitionKey, Progress], timeout: float
    ) -> None:
        metadata = consumer.list_topics(self.topic, timeout=timeout).topics.get(self.topic)
        if metadata is None or metadata.error is not None:
            return
        pending: set[int] = set()
        assignment = []
        for partition in metadata.partitions:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=timeout
            )
            if high > low:
                pending.add(partition)
                assignment.append(TopicPartition(self.topic, partition, low))
        consumer.assign(assignment)
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise KafkaAdminError(
                    f"could not read {self.topic} to its end within {timeout:.0f} s"
                )
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(message.partition())
                    continue
                raise KafkaAdminError(f"reading {self.topic}: {error}")
            self._take(found, message.key(), message.value())

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
