"""MM2's binary internal records (heartbeats, checkpoints, offset syncs), byte for byte."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final, Self

from srm_common.errors import RecordFormatError

# MM2 creates heartbeats, <S>.checkpoints.internal and the offset-syncs topics with one
# partition and always writes (and reads) partition 0.
HEARTBEATS_PARTITION: Final = 0
CHECKPOINTS_PARTITION: Final = 0
OFFSET_SYNCS_PARTITION: Final = 0

HEARTBEAT_VERSION: Final = 0
CHECKPOINT_VERSION: Final = 0

# Kafka protocol STRING: INT16 byte length, so at most Short.MAX_VALUE bytes of UTF-8.
MAX_STRING_BYTES: Final = 32767

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_INT32_RANGE: Final = (-(2**31), 2**31 - 1)
_INT64_RANGE: Final = (-(2**63), 2**63 - 1)


def encode_kafka_string(value: str, *, field: str = "string") -> bytes:
    """Encode ``value`` as a Kafka protocol STRING: INT16 byte length, then UTF-8.

    ``"A"`` -> ``00 01 41``; ``""`` -> ``00 00``; ``"ü"`` -> ``00 02 c3 bc``.
    Raises ``RecordFormatError`` (naming ``field``) when the UTF-8 form is longer than
    32767 bytes or ``value`` holds a lone surrogate (Java would silently write ``?``).
    """
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RecordFormatError(
            f"field '{field}' is not valid Unicode (lone surrogate at index {exc.start});"
            " MM2 records hold UTF-8 strings"
        ) from exc
    if len(data) > MAX_STRING_BYTES:
        raise RecordFormatError(
            f"field '{field}' is {len(data)} bytes of UTF-8; a Kafka protocol STRING"
            f" holds at most {MAX_STRING_BYTES} bytes"
        )
    return _INT16.pack(len(data)) + data


def decode_kafka_string(
    data: bytes, position: int = 0, *, field: str = "string"
) -> tuple[str, int]:
    """Decode the Kafka protocol STRING at ``position``; return it and the next position.

    ``decode_kafka_string(bytes.fromhex("000141000142"))`` -> ``("A", 3)``.
    Raises ``RecordFormatError`` for a negative length (a null string: MM2's STRING is
    non-null), fewer bytes than announced, or bytes that are not UTF-8 (stricter than
    Java, which substitutes U+FFFD).
    """
    reader = _Reader("string", data, position)
    return reader.string(field), reader.position


class _Reader:
    """Positional reader over one record key or value; every failure says where."""

    def __init__(self, part: str, data: bytes | None, position: int = 0) -> None:
        if data is None:
            raise RecordFormatError(f"{part} is null (a tombstone); MM2 never writes one")
        self.part = part
        self.data = data
        self.position = position

    def _take(self, field: str, kind: str, size: int) -> bytes:
        remaining = len(self.data) - self.position
        if remaining < size:
            raise RecordFormatError(
                f"{self.part}: field '{field}' ({kind}) at byte {self.position} needs"
                f" {size} bytes, {max(remaining, 0)} remain (truncated record?)"
            )
        chunk = self.data[self.position : self.position + size]
        self.position += size
        return chunk

    def int16(self, field: str) -> int:
        value: int = _INT16.unpack(self._take(field, "INT16", 2))[0]
        return value

    def int32(self, field: str) -> int:
        value: int = _INT32.unpack(self._take(field, "INT32", 4))[0]
        return value

    def int64(self, field: str) -> int:
        value: int = _INT64.unpack(self._take(field, "INT64", 8))[0]
        return value

    def version(self, expected: int) -> None:
        at = self.position
        found = self.int16("version")
        if found != expected:
            raise RecordFormatError(
                f"{self.part}: version {found} at byte {at}; only version {expected} is"
                " defined (a newer MM2 wrote it, or these are not MM2 bytes)"
            )

    def string(self, field: str) -> str:
        at = self.position
        length = self.int16(field)
        if length < 0:
            raise RecordFormatError(
                f"{self.part}: field '{field}' (STRING) at byte {at} has length {length};"
                " MM2 strings are never null"
            )
        raw = self._take(field, "STRING", length)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordFormatError(
                f"{self.part}: field '{field}' (STRING) at byte {at} is not UTF-8"
                f" ({exc.reason} at string byte {exc.start})"
            ) from exc


def _require_string(owner: str, field: str, value: str) -> None:
    encode_kafka_string(value, field=f"{owner}.{field}")


def _require_int(owner: str, field: str, value: int, bounds: tuple[int, int]) -> None:
    low, high = bounds
    if not low <= value <= high:
        width = "INT32" if bounds == _INT32_RANGE else "INT64"
        raise RecordFormatError(
            f"field '{owner}.{field}' = {value} does not fit MM2's {width} [{low}, {high}]"
        )


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One record of the ``heartbeats`` topic (partition 0): "S can reach T at this time".

    Key ``source STRING, target STRING``; value ``version INT16 = 0, timestamp INT64``
    (milliseconds since the epoch). ``Heartbeat("A", "B", 1700000000000)``::

        key   00 01 41 | 00 01 42
        value 00 00 | 00 00 01 8b cf e5 68 00

    Invariant: every instance encodes (strings <= 32767 UTF-8 bytes, INT64 timestamp).
    """

    source_cluster_alias: str
    target_cluster_alias: str
    timestamp_ms: int

    def __post_init__(self) -> None:
        _require_string("heartbeat", "source_cluster_alias", self.source_cluster_alias)
        _require_string("heartbeat", "target_cluster_alias", self.target_cluster_alias)
        _require_int("heartbeat", "timestamp_ms", self.timestamp_ms, _INT64_RANGE)

    def encode_key(self) -> bytes:
        """The key bytes; compaction keeps the latest heartbeat per (source, target)."""
        return encode_kafka_string(self.source_cluster_alias) + encode_kafka_string(
            self.target_cluster_alias
        )

    def encode_value(self) -> bytes:
        """The value bytes: version 0, then the timestamp."""
        return _INT16.pack(HEARTBEAT_VERSION) + _INT64.pack(self.timestamp_ms)

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> Self:
        """Parse fields by position, ignoring trailing bytes as MM2 does.

        Raises ``RecordFormatError`` on null, truncated or non-UTF-8 input and on a
        version other than 0 (MM2 only ``assert``s it, so a newer layout would be misread).
        """
        k = _Reader("heartbeat key", key)
        source = k.string("source_cluster_alias")
        target = k.string("target_cluster_alias")
        v = _Reader("heartbeat value", value)
        v.version(HEARTBEAT_VERSION)
        return cls(source, target, v.int64("timestamp_ms"))


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One record of ``<S>.checkpoints.internal`` on T (partition 0): a translated commit.

    ``topic`` is the **downstream** (remote) name, ``metadata`` the upstream commit's
    metadata (``""`` when there was none). Key ``group STRING, topic STRING, partition
    INT32``; value ``version INT16 = 0, upstreamOffset INT64, downstreamOffset INT64,
    metadata STRING``. ``Checkpoint("g", "A.t", 0, 100, 42)``::

        key   00 01 67 | 00 03 41 2e 74 | 00 00 00 00
        value 00 00 | 00 00 00 00 00 00 00 64 | 00 00 00 00 00 00 00 2a | 00 00

    Invariant: every instance encodes (strings <= 32767 UTF-8 bytes, INT32/INT64 ranges).
    """

    consumer_group_id: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    def __post_init__(self) -> None:
        _require_string("checkpoint", "consumer_group_id", self.consumer_group_id)
        _require_string("checkpoint", "topic", self.topic)
        _require_string("checkpoint", "metadata", self.metadata)
        _require_int("checkpoint", "partition", self.partition, _INT32_RANGE)
        _require_int("checkpoint", "upstream_offset", self.upstream_offset, _INT64_RANGE)
        _require_int("checkpoint", "downstream_offset", self.downstream_offset, _INT64_RANGE)

    def encode_key(self) -> bytes:
        """The key bytes; compaction keeps the latest checkpoint per (group, topic, partition)."""
        return (
            encode_kafka_string(self.consumer_group_id)
            + encode_kafka_string(self.topic)
            + _INT32.pack(self.partition)
        )

    def encode_value(self) -> bytes:
        """The value bytes: version 0, both offsets, then the metadata string."""
        return (
            _INT16.pack(CHECKPOINT_VERSION)
            + _INT64.pack(self.upstream_offset)
            + _INT64.pack(self.downstream_offset)
            + encode_kafka_string(self.metadata)
        )

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> Self:
        """Parse fields by position, ignoring trailing bytes as MM2 does.

        Raises ``RecordFormatError`` on null, truncated or non-UTF-8 input and on a
        version other than 0.
        """
        k = _Reader("checkpoint key", key)
        group = k.string("consumer_group_id")
        topic = k.string("topic")
        partition = k.int32("partition")
        v = _Reader("checkpoint value", value)
        v.version(CHECKPOINT_VERSION)
        upstream = v.int64("upstream_offset")
        downstream = v.int64("downstream_offset")
        return cls(group, topic, partition, upstream, downstream, v.string("metadata"))


@dataclass(frozen=True, slots=True)
class OffsetSync:
    """One record of an ``mm2-offset-syncs.<C>.internal`` topic (partition 0).

    "Upstream offset ``upstream_offset`` of ``topic``/``partition`` was written at
    ``downstream_offset`` in the remote topic." ``topic`` is the **upstream** name. Key
    ``topic STRING, partition INT32``; value ``upstreamOffset INT64, downstreamOffset
    INT64``, with **no version field**. ``OffsetSync("t", 0, 100, 42)``::

        key   00 01 74 | 00 00 00 00
        value 00 00 00 00 00 00 00 64 | 00 00 00 00 00 00 00 2a

    Invariant: every instance encodes (topic <= 32767 UTF-8 bytes, INT32/INT64 ranges).
    """

    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int

    def __post_init__(self) -> None:
        _require_string("offset_sync", "topic", self.topic)
        _require_int("offset_sync", "partition", self.partition, _INT32_RANGE)
        _require_int("offset_sync", "upstream_offset", self.upstream_offset, _INT64_RANGE)
        _require_int("offset_sync", "downstream_offset", self.downstream_offset, _INT64_RANGE)

    def encode_key(self) -> bytes:
        """The key bytes; compaction keeps the latest sync per (topic, partition)."""
        return encode_kafka_string(self.topic) + _INT32.pack(self.partition)

    def encode_value(self) -> bytes:
        """The value bytes: upstream offset, then downstream offset."""
        return _INT64.pack(self.upstream_offset) + _INT64.pack(self.downstream_offset)

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> Self:
        """Parse fields by position, ignoring trailing bytes as MM2 does.

        Raises ``RecordFormatError`` on null, truncated or non-UTF-8 input; there is no
        version to check.
        """
        k = _Reader("offset sync key", key)
        topic = k.string("topic")
        partition = k.int32("partition")
        v = _Reader("offset sync value", value)
        upstream = v.int64("upstream_offset")
        return cls(topic, partition, upstream, v.int64("downstream_offset"))
