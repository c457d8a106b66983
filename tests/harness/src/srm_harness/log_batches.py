"""The record batches of a topic as its broker stores them: codec, bytes, offsets.

Tests and the bench check what a copy left on the target's log (is every batch still
compressed with the source's codec? how many bytes?) without trusting any client that
decompresses or re-batches on the way: a raw Fetch returns the log's bytes as stored,
read here with aiokafka's protocol and record classes (the workspace's own dependency;
imported when used). Every batch's CRC is checked; its records are not decompressed
(aiokafka has no zstd or lz4 codec installed here): record counts come from the header.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Sequence
from dataclasses import dataclass

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_FETCH_BYTES = 8 * 1024 * 1024
# Where a v2 batch header holds its record count (../shared/reference/scale-and-wan.md).
_RECORD_COUNT = 57


@dataclass(frozen=True)
class Batch:
    base_offset: int
    next_offset: int
    codec: str
    size: int  # bytes on the log, header included
    records: int
    control: bool


def log_batches(
    bootstrap: str, topic: str, timeout: float = 60, *, first: int | None = None
) -> dict[int, list[Batch]]:
    """Every batch of every partition of ``topic``, in offset order (only about the
    ``first`` ones of each, when given)."""
    return asyncio.run(asyncio.wait_for(_read(bootstrap, topic, first), timeout))


# A producer that compresses (librdkafka) still sends a batch uncompressed when compressing
# would not make it smaller: a batch of one or a few short records. Checks of a topic's
# codec look at batches of at least this many records.
WORTH_COMPRESSING = 10


def data_codecs(batches: dict[int, list[Batch]], min_records: int = 1) -> set[str]:
    """The codecs of the data batches of at least ``min_records`` records (transaction
    markers are never compressed)."""
    return {
        b.codec for bs in batches.values() for b in bs if not b.control and b.records >= min_records
    }


def codec_share(batches: dict[int, list[Batch]], codec: str) -> float:
    """The share of the data batches' bytes that are in batches of ``codec``."""
    data = [b for bs in batches.values() for b in bs if not b.control]
    total = sum(b.size for b in data)
    return sum(b.size for b in data if b.codec == codec) / total if total else 0.0


def log_bytes(batches: dict[int, list[Batch]]) -> int:
    return sum(b.size for bs in batches.values() for b in bs)


async def _read(bootstrap: str, topic: str, first: int | None) -> dict[int, list[Batch]]:
    from aiokafka.client import AIOKafkaClient
    from aiokafka.structs import TopicPartition

    client = AIOKafkaClient(bootstrap_servers=bootstrap.split(","), client_id="srm-log-batches")
    await client.bootstrap()
    try:
        await client.set_topics([topic])
        out: dict[int, list[Batch]] = {}
        for partition in sorted(client.cluster.partitions_for_topic(topic) or ()):
            leader = client.cluster.leader_for_partition(TopicPartition(topic, partition))
            out[partition] = await _partition(client, leader, topic, partition, first)
        return out
    finally:
        await client.close()


async def _partition(
    client, leader: int, topic: str, partition: int, first: int | None
) -> list[Batch]:  # type: ignore[no-untyped-def]
    from aiokafka.protocol.fetch import FetchRequest

    batches: list[Batch] = []
    offset = 0
    while True:
        request = FetchRequest(
            0, 0, _FETCH_BYTES, 0, [(topic, [(partition, offset, _FETCH_BYTES)])]
        )
        response = await client.send(leader, request)
        ((_topic, parts),) = response.topics
        ((_partition, error, high, *_rest, data),) = parts
        if error:
            raise RuntimeError(f"fetch {topic}-{partition} at {offset}: error code {error}")
        read = _parse(bytes(data or b""))
        batches += read
        if read:
            offset = read[-1].next_offset
        if offset >= high or not read or (first is not None and len(batches) >= first):
            return batches


def _parse(data: bytes) -> Sequence[Batch]:
    from aiokafka.record.memory_records import MemoryRecords

    records = MemoryRecords(data)
    out = []
    pos = 0
    while records.has_next():
        batch = records.next_batch()
        assert batch is not None
        (length,) = struct.unpack_from(">i", data, pos + 8)
        (count,) = struct.unpack_from(">i", data, pos + _RECORD_COUNT)
        pos += 12 + length
        if not batch.validate_crc():
            raise RuntimeError(f"batch at offset {batch.base_offset}: CRC mismatch")
        out.append(
            Batch(
                base_offset=batch.base_offset,
                next_offset=batch.next_offset,
                codec=CODECS[batch.compression_type],
                size=12 + length,
                records=count,
                control=bool(batch.is_control_batch),
            )
        )
    return out
