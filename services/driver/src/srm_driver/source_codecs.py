"""Which codec a source topic's records are compressed with: what its copies get.

A copy re-produces every record (docs/design.md, "Compressed topics"), so the target
keeps the source's codec only if the copy's producer compresses with it. A topic whose
``compression.type`` names a codec has every batch in it (the broker recompresses what
producers send otherwise). A topic left at ``producer`` (Kafka's default) keeps each
producer's own codec: there the codec is read from the attributes of the newest batches
of one of its partitions, with a raw Fetch (aiokafka's protocol classes: librdkafka hides
batch attributes), one request per partition (up to 8 at a time). About 64 KiB per topic
are asked for (more when the first batch is larger: a broker returns it whole), from up
to 1,000 offsets before the end: the attributes sit in each batch header
(``../shared/reference/scale-and-wan.md``), and a truncated batch still has its header.
The newest compressed batch there names the codec: a producer that compresses still
sends a batch uncompressed when compressing would not make it smaller (librdkafka does,
for a batch of one short record), so an uncompressed batch among compressed ones says
nothing about the producer's codec.

A topic that is empty, or that cannot be read now, has no codec yet (left out of the
answer): its copies use the producer's configured codec until a later check finds one.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Iterable, Mapping, Sequence

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from srm_common.adapters import answering
from srm_common.adapters.kafka_clients import aiokafka_security

from srm_driver.kafka_admin import TIMEOUT_S, KafkaAdminError, read_partition_offsets

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# Record batch codes (attributes bits 0-2, the same in message formats 0 and 1).
BATCH_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
# compression.type of a topic that names one codec for all of its batches.
TOPIC_CODECS = {
    "uncompressed": "none",
    "none": "none",
    "gzip": "gzip",
    "snappy": "snappy",
    "lz4": "lz4",
    "zstd": "zstd",
}
_CONTROL = 0x20
# Bytes asked for per partition, from this many offsets before its end (see above).
_PEEK_BYTES = 64 * 1024
_PEEK_OFFSETS = 1000
_CONCURRENT_FETCHES = 8
# Partitions of one topic looked at (the one holding most records is read).
_PARTITIONS_PER_TOPIC = 4


def codec_of_config(value: str | None) -> str | None:
    """The codec every batch of a topic with this ``compression.type`` has; None for
    ``producer`` (each producer's own) or a value not known here."""
    return TOPIC_CODECS.get((value or "").strip().lower())


def newest_codec(data: bytes) -> str | None:
    """The codec of the last compressed data batch whose header ``data`` (a Fetch
    answer's record set, possibly cut off inside a batch) holds, else "none" when it
    holds an uncompressed data batch; control batches (transaction markers) are skipped;
    None when there is no data batch."""
    found = None
    compressed = None
    pos = 0
    while pos + 17 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        magic = data[pos + 16]
        if magic >= 2:
            if pos + 23 > len(data):
                break
            (attributes,) = struct.unpack_from(">h", data, pos + 21)
        else:  # message format 0/1: offset, size, crc, magic, attributes (1 byte)
            if pos + 18 > len(data):
                break
            attributes = data[pos + 17]
        if not attributes & _CONTROL or magic < 2:
            found = BATCH_CODECS.get(attributes & 0x07, found)
            if attributes & 0x07:
                compressed = found
        if length <= 0:
            break
        pos += 12 + length
    return compressed or found


class SourceCodecs:
    """Finds the codec of source topics (see the module docstring); blocks."""

    def __init__(self, admin: AdminClient, keys: Mapping[str, str], *, timeout: float = TIMEOUT_S):
        self._admin = admin
        self._keys = dict(keys)
        self._timeout = timeout

    def find(self, partitions: Mapping[str, Sequence[int]]) -> dict[str, str]:
        """The codec of each topic in ``partitions`` (topic -> some of its partitions)
        that has one now; KafkaAdminError when the configs cannot be read at all."""
        configured = self._configured(partitions)
        codecs = {t: c for t, v in configured.items() if (c := codec_of_config(v)) is not None}
        left = {
            t: list(partitions[t])[:_PARTITIONS_PER_TOPIC] for t in configured if t not in codecs
        }
        if left:
            codecs.update(self._read_batches(left))
        return codecs

    def _configured(self, topics: Iterable[str]) -> dict[str, str | None]:
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        if not resources:
            return {}
        try:
            futures = answering.send(  # a cluster down costs a core otherwise
                self._admin,
                resources[0].name,
                lambda: self._admin.describe_configs(resources, request_timeout=self._timeout),
                self._timeout,
            )
        except KafkaException as exc:
            raise KafkaAdminError(f"cannot read topic configs: {exc}") from exc
        out: dict[str, str | None] = {}
        for resource, future in futures.items():
            try:
                entries = future.result(self._timeout + 5)
            except Exception as exc:  # noqa: BLE001 - that topic waits for the next check
                log.debug("compression.type of %s not read: %s", resource.name, exc)
                continue
            entry = entries.get("compression.type")
            out[resource.name] = entry.value if entry is not None else None
        return out

    def _read_batches(self, partitions: Mapping[str, list[int]]) -> dict[str, str]:
        wanted = [(t, p) for t, ps in partitions.items() for p in ps]
        offsets, _failed = read_partition_offsets(
            self._admin, wanted, read_committed=False, timeout=self._timeout
        )
        newest: dict[str, tuple[TopicPartition, int]] = {}
        for (topic, partition), where in offsets.items():
            if where.end <= where.log_start:
                continue  # empty
            held = where.end - where.log_start
            if topic not in newest or held > newest[topic][1]:
                start = max(where.log_start, where.end - _PEEK_OFFSETS)
                newest[topic] = ((topic, partition), start)
        if not newest:
            return {}
        at = {tp: offset for tp, offset in newest.values()}
        try:
            data = asyncio.run(asyncio.wait_for(self._fetch(at), self._timeout))
        except Exception as exc:  # noqa: BLE001 - codecs are found at a later check
            log.warning("cannot read the newest batches of %d source topics: %s", len(at), exc)
            return {}
        codecs = {}
        for (topic, _partition), records in data.items():
            codec = newest_codec(records)
            if codec is not None:
                codecs[topic] = codec
        return codecs

    async def _fetch(self, at: Mapping[TopicPartition, int]) -> dict[TopicPartition, bytes]:
        from aiokafka.client import AIOKafkaClient
        from aiokafka.protocol.fetch import FetchRequest
        from aiokafka.structs import TopicPartition as Tp

        client = AIOKafkaClient(
            bootstrap_servers=self._keys["bootstrap.servers"].split(","),
            client_id="srm-codec-probe",
            **aiokafka_security(self._keys),
        )
        out: dict[TopicPartition, bytes] = {}
        try:
            await client.bootstrap()
            await client.set_topics(sorted({topic for topic, _ in at}))
            limit = asyncio.Semaphore(_CONCURRENT_FETCHES)

            async def peek(topic: str, partition: int, offset: int) -> None:
                leader = client.cluster.leader_for_partition(Tp(topic, partition))
                if leader is None or leader < 0:
                    return
                # One partition a request: a broker answers a partition other than a
                # request's first with nothing when its first batch is larger than the
                # bytes asked for (KIP-74); the first one always gets its first batch.
                # read_uncommitted: an open transaction's batches have the codec too.
                request = FetchRequest(
                    0, 0, _PEEK_BYTES, 0, [(topic, [(partition, offset, _PEEK_BYTES)])]
                )
                async with limit:
                    response = await client.send(leader, request)
                for _topic, parts in response.topics:
                    for part in parts:
                        error, records = part[1], part[-1]
                        if error == 0 and records:
                            out[(topic, partition)] = bytes(records)

            answers = await asyncio.gather(
                *(peek(topic, partition, offset) for (topic, partition), offset in at.items()),
                return_exceptions=True,
            )
            failed = [a for a in answers if isinstance(a, BaseException)]
            if failed:
                log.warning(
                    "cannot read the newest batches of %d source topics: %s", len(failed), failed[0]
                )
        finally:
            await client.close()
        return out
