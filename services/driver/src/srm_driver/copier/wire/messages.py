"""The small requests and their answers: ApiVersions, Metadata, InitProducerId and
ListOffsets (versions in :mod:`~srm_driver.copier.wire.apis`). Each ``*_request`` returns
the request's body (after the request header); each ``*_response`` parses an answer's
body (after its correlation id). Pure: no sockets here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from srm_driver.copier.wire.primitives import Reader, Writer

EARLIEST, LATEST = -2, -1  # ListOffsets' timestamps for the log's start and end
READ_COMMITTED = 1


def api_versions_request() -> bytes:
    return b""


def api_versions_response(view: memoryview) -> tuple[int, dict[int, tuple[int, int]]]:
    """(error code, {api key: (min version, max version)})."""
    reader = Reader(view)
    error = reader.int16()
    ranges = {}
    for _ in range(reader.array()):
        key, low, high = reader.int16(), reader.int16(), reader.int16()
        ranges[key] = (low, high)
    return error, ranges


@dataclass(frozen=True)
class Broker:
    node_id: int
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PartitionLeader:
    partition: int
    error: int
    leader: int  # a node id; -1 while there is none
    leader_epoch: int


@dataclass(frozen=True)
class Metadata:
    brokers: dict[int, Broker]
    # topic -> (topic error code, its partitions by index)
    topics: dict[str, tuple[int, dict[int, PartitionLeader]]]


def metadata_request(topics: Sequence[str] | None) -> bytes:
    """Metadata of ``topics`` (None: every topic), never creating one."""
    writer = Writer()
    if topics is None:
        writer.array(-1)
    else:
        writer.array(len(topics))
        for topic in topics:
            writer.string(topic)
    return bytes(writer.boolean(False).boolean(False).boolean(False).buffer)


def metadata_response(view: memoryview) -> Metadata:
    reader = Reader(view)
    reader.int32()  # throttle time
    brokers = {}
    for _ in range(reader.array()):
        node, host, port = reader.int32(), reader.string(), reader.int32()
        reader.nullable_string()  # rack
        brokers[node] = Broker(node, host, port)
    reader.nullable_string()  # cluster id
    reader.int32()  # controller id
    topics = {}
    for _ in range(reader.array()):
        error, name = reader.int16(), reader.string()
        reader.boolean()  # internal
        partitions = {}
        for _ in range(reader.array()):
            p_error, index, leader, epoch = (
                reader.int16(), reader.int32(), reader.int32(), reader.int32()
            )  # fmt: skip
            reader.int32_array()  # replicas
            reader.int32_array()  # in-sync replicas
            reader.int32_array()  # offline replicas
            partitions[index] = PartitionLeader(index, p_error, leader, epoch)
        reader.int32()  # topic authorized operations
        topics[name] = (error, partitions)
    reader.int32()  # cluster authorized operations
    return Metadata(brokers, topics)


def init_producer_id_request(timeout_ms: int = 60_000) -> bytes:
    """An idempotent (not transactional) producer's id and epoch."""
    return bytes(Writer().nullable_string(None).int32(timeout_ms).buffer)


def init_producer_id_response(view: memoryview) -> tuple[int, int, int]:
    """(error code, producer id, producer epoch)."""
    reader = Reader(view)
    reader.int32()  # throttle time
    return reader.int16(), reader.int64(), reader.int16()


def list_offsets_request(
    topic: str, timestamps: Mapping[int, int], isolation: int = READ_COMMITTED
) -> bytes:
    """The offset of ``timestamps[partition]`` (or :data:`EARLIEST` / :data:`LATEST`) for
    each partition of one topic; LATEST under ``read_committed`` is the last stable offset."""
    writer = Writer().int32(-1).int8(isolation).array(1).string(topic).array(len(timestamps))
    for partition, timestamp in timestamps.items():
        writer.int32(partition).int32(-1).int64(timestamp)
    return bytes(writer.buffer)


def list_offsets_response(view: memoryview) -> dict[tuple[str, int], tuple[int, int]]:
    """{(topic, partition): (error code, offset)}."""
    reader = Reader(view)
    reader.int32()  # throttle time
    found = {}
    for _ in range(reader.array()):
        topic = reader.string()
        for _ in range(reader.array()):
            partition, error = reader.int32(), reader.int16()
            reader.int64()  # timestamp
            offset = reader.int64()
            reader.int32()  # leader epoch
            found[(topic, partition)] = (error, offset)
    return found
