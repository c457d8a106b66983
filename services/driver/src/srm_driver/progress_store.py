"""Progress per upstream partition in ``mm2-offsets.<source>.internal`` on the target.

Same topic, key bytes and partitioning as MM2's Connect offset store (murmur2 of the key,
so a Java producer would pick the same partition), so each key's records stay in order
in one partition and compaction keeps the latest. The value is
:class:`srm_common.domain.progress.Progress`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from confluent_kafka.admin import AdminClient
from srm_common.adapters.kafka_reader import TopicTail
from srm_common.domain.connect_offsets import decode_source_offset, source_offset_key
from srm_common.domain.policy import mm2_offsets_topic
from srm_common.domain.progress import Progress
from srm_common.errors import RecordFormatError

from srm_driver.internal_writer import InternalWriter
from srm_driver.kafka_admin import create_topic

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]
CONNECT_OFFSETS_PARTITIONS = 25  # Connect's offset.storage.partitions default


class ProgressStore:
    """Reads the progress of one source cluster, then only what was written since each
    time it is asked again; writes updates synchronously.

    The composition root hands in the target's ``admin``, the ``writer`` of
    ``mm2-offsets.<source>.internal`` (partitioned by key) and the ``tail`` that follows
    that topic (:class:`srm_common.adapters.kafka_reader.TopicTail`, one consumer kept)."""

    def __init__(
        self,
        source_alias: str,
        *,
        admin: AdminClient,
        writer: InternalWriter,
        tail: TopicTail,
        partitions: int = CONNECT_OFFSETS_PARTITIONS,
        replication_factor: int = -1,
    ) -> None:
        self.source_alias = source_alias
        self.topic = mm2_offsets_topic(source_alias)
        for part in (writer, tail):
            if part.topic != self.topic:
                raise ValueError(f"progress of {source_alias} is in {self.topic}, not {part.topic}")
        self._admin = admin
        self._partitions = partitions
        self._replication_factor = replication_factor
        self._writer = writer
        self._tail = tail
        # The latest progress of each upstream partition read so far, and the keys read
        # from each partition of the topic (forgotten if that partition starts again).
        self._found: dict[TopicPartitionKey, Progress] = {}
        self._keys_of: dict[int, set[TopicPartitionKey]] = {}
        self._lock = threading.Lock()

    def ensure_topic(self) -> None:
        create_topic(
            self._admin,
            self.topic,
            partitions=self._partitions,
            replication_factor=self._replication_factor,
            config={"cleanup.policy": "compact"},
        )

    def load(self) -> Mapping[TopicPartitionKey, Progress]:
        """Latest progress of every upstream partition of the source, read to the end.
        Only the records written since the last load are read (a planner asks at every
        pass while partitions wait: the work follows the writes, not the topic's size).
        The answer is a read-only view that the next load brings up to date.

        A partition of the topic that ends before where the last load stopped was
        created again (or truncated): what was read from it is forgotten and it is read
        again from its start. A topic deleted and created again that has already grown
        past that point is not told apart (its topic id is not looked at)."""
        with self._lock:
            forgotten = False
            for message in self._tail.new_records():
                if not forgotten:  # the tail knows which partitions start again by now
                    forgotten = self._forget(self._tail.rewound)
                self._take(message.partition(), message.key(), message.value())
            if not forgotten:
                self._forget(self._tail.rewound)
            return MappingProxyType(self._found)

    def _forget(self, partitions: Iterable[int]) -> bool:
        for partition in partitions:
            for where in self._keys_of.pop(partition, ()):
                self._found.pop(where, None)
        return True

    def _take(self, partition: int, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            return
        try:
            offset = decode_source_offset(key, value)
            if offset is None or offset.cluster != self.source_alias:
                return
            where = (offset.topic, offset.partition)
            if value is None:
                self._found.pop(where, None)  # an offsets reset: start from the beginning
            else:
                self._found[where] = Progress.decode_value(value)
                self._keys_of.setdefault(partition, set()).add(where)
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
        self._tail.close()
