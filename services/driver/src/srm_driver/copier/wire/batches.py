"""Record batches (message format v2) as bytes: found in a fetched partition's records,
and re-stamped for another producer without decoding a record.

    baseOffset 8 | batchLength 4 | partitionLeaderEpoch 4 | magic 1 | crc 4 |
    attributes 2 | lastOffsetDelta 4 | baseTimestamp 8 | maxTimestamp 8 |
    producerId 8 | producerEpoch 2 | baseSequence 4 | recordCount 4 | records ...
    \\______________ 61 bytes of header ______________/   CRC-32C: attributes to the end

Re-stamping (:func:`restamp`) writes a new 61-byte header (base offset 0, no leader
epoch, the copying producer's id, epoch and base sequence, the transactional bit
cleared) and leaves the records where they are: the CRC-32C is computed over the new
header's covered part and then continued over the original records, so a batch is sent
as two buffers, the new header and a slice of the fetch response, and its records are
never copied or decompressed (``../shared/reference/scale-and-wan.md``). A batch whose
keys, values, headers, timestamps and codec must stay the source's is copied byte for
byte this way; the target's broker validates the CRC, the sequence and the epoch.
"""

from __future__ import annotations

import struct

try:  # the CPU's CRC-32C instruction (about 8 GB/s here)
    from crc32c import crc32c
except ImportError:  # pragma: no cover - aiokafka's table-driven one, about 0.35 GB/s
    from aiokafka.record._crecords.cutil import crc32c_cython as crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")
CRC_AT, CRC_FROM = 17, 21  # the CRC's own bytes; where the bytes it covers start
TRANSACTIONAL = 0x10
CONTROL = 0x20
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_ATTRIBUTES_AND_DELTA = struct.Struct(">hi")
_COUNT = struct.Struct(">i")


class UnsupportedBatch(ValueError):
    """A batch this layer will not pass through (older than v2)."""


def split(records: memoryview) -> tuple[list[memoryview], int]:
    """The whole data batches in a fetched partition's records, as slices of them (a
    trailing partial batch, which a fetch may return, is left out; so are control
    batches, the transaction markers), and the offset after the last whole batch, data
    or control (-1: no whole batch)."""
    batches: list[memoryview] = []
    position, next_offset, size = 0, -1, len(records)
    while position + HEADER.size <= size:
        base, length = _OFFSET_AND_LENGTH.unpack_from(records, position)
        end = position + 12 + length
        if end > size:
            break
        attributes, last_delta = _ATTRIBUTES_AND_DELTA.unpack_from(records, position + CRC_FROM)
        if not attributes & CONTROL:
            batches.append(records[position:end])
        next_offset = base + last_delta + 1
        position = end
    return batches, next_offset


def record_count(batch: memoryview) -> int:
    count: int = _COUNT.unpack_from(batch, HEADER.size - 4)[0]
    return count


def restamp(
    batch: memoryview, producer_id: int, epoch: int, sequence: int
) -> tuple[bytearray, memoryview, int]:
    """``batch`` re-stamped for this producer, as (new header, the records as they were,
    the producer's sequence after this batch). Send the two parts one after the other."""
    (_, length, _, magic, _, attributes, last_delta, base_ts, max_ts, _, _, _, count) = (
        HEADER.unpack_from(batch)
    )
    if magic != 2:
        raise UnsupportedBatch(f"a record batch of magic {magic}: only v2 batches pass through")
    header = bytearray(HEADER.size)
    HEADER.pack_into(
        header, 0, 0, length, -1, 2, 0, attributes & ~TRANSACTIONAL, last_delta,
        base_ts, max_ts, producer_id, epoch, sequence, count,
    )  # fmt: skip
    records = batch[HEADER.size :]
    with memoryview(header) as view, view[CRC_FROM:] as covered:
        checksum = crc32c(records, crc32c(covered))
    struct.pack_into(">I", header, CRC_AT, checksum)
    return header, records, (sequence + last_delta + 1) & 0x7FFFFFFF


def checksum_holds(batch: memoryview) -> bool:
    """Whether a batch's CRC-32C matches the bytes it covers."""
    (stored,) = struct.unpack_from(">I", batch, CRC_AT)
    return bool(crc32c(batch[CRC_FROM:]) == stored)
