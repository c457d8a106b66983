"""Record batches found in a fetch and re-stamped for another producer
(:mod:`srm_driver.copier.wire.batches`), checked with aiokafka's own record batch reader:
the re-stamped batch is valid (CRC-32C), carries the new producer's id, epoch and
sequence, and every record (offsets, timestamps, keys, values, headers) and the codec
are the source's, the records' bytes never copied."""

from __future__ import annotations

import struct

import pytest
from aiokafka.record.default_records import DefaultRecordBatch
from srm_driver.copier.wire.batches import (
    CONTROL,
    UnsupportedBatch,
    checksum_holds,
    record_count,
    restamp,
    split,
)
from srm_driver.testing import record_batch

GZIP = 1


def _records(batch: DefaultRecordBatch) -> list[tuple[object, ...]]:
    return [(r.timestamp, r.key, r.value, r.headers) for r in batch]


@pytest.mark.parametrize("codec", [0, GZIP])
def test_a_restamped_batch_is_valid_for_the_new_producer_with_the_same_records(codec: int) -> None:
    batch = record_batch(1000, 5, codec=codec, producer_id=900, transactional=True, headers=True)
    source = memoryview(bytearray(batch))
    header, rest, after = restamp(source, producer_id=42, epoch=3, sequence=2_147_483_645)
    assert rest.obj is source.obj  # the records are a slice of the fetched bytes
    assert after == 2  # 2147483645 + 5 wraps past the int32 maximum, as Kafka's sequence does
    copied = DefaultRecordBatch(bytes(header) + bytes(rest))
    original = DefaultRecordBatch(bytes(source))
    assert copied.validate_crc()
    assert (copied.producer_id, copied.producer_epoch, copied.base_sequence) == (
        42,
        3,
        2_147_483_645,
    )
    assert (copied.base_offset, copied.is_transactional) == (0, False)
    assert copied.compression_type == original.compression_type == codec
    assert _records(copied) == _records(original)
    assert struct.unpack_from(">i", header, 12)[0] == -1  # no partition leader epoch


def test_a_batch_older_than_v2_is_refused() -> None:
    old = bytearray(record_batch(0, 1))
    old[16] = 1
    with pytest.raises(UnsupportedBatch, match="magic 1"):
        restamp(memoryview(old), 1, 0, 0)


def test_split_keeps_whole_data_batches_and_skips_markers_and_a_partial_tail() -> None:
    data, marker, tail = record_batch(10, 3), bytearray(record_batch(13, 1)), record_batch(14, 2)
    struct.pack_into(">h", marker, 21, CONTROL)  # a transaction marker's attributes
    fetched = memoryview(bytearray(data + marker + tail[:-7]))
    batches, next_offset = split(fetched)
    assert [bytes(b) for b in batches] == [data]
    assert batches[0].obj is fetched.obj
    assert next_offset == 14  # after the marker: the partial batch is fetched again
    assert record_count(batches[0]) == 3
    assert split(memoryview(b"")) == ([], -1)
    assert split(fetched[:30]) == ([], -1)


def test_checksum_holds_only_for_untouched_bytes() -> None:
    raw = bytearray(record_batch(0, 2))
    assert checksum_holds(memoryview(raw))
    raw[-1] ^= 1
    assert not checksum_holds(memoryview(raw))


def test_a_broken_source_crc_is_not_checked_by_the_restamp_but_can_be() -> None:
    source = bytearray(record_batch(0, 1))
    source[-1] ^= 0xFF  # a flipped record byte: the source's CRC no longer matches
    header, rest, _ = restamp(memoryview(source), producer_id=1, epoch=0, sequence=0)
    # the copy's CRC covers what it sends (the target's broker checks that); the source's
    # is not checked on the way (a second pass over the bytes): checksum_holds is there
    # for a caller that wants it
    assert DefaultRecordBatch(bytes(header) + bytes(rest)).validate_crc()
    assert not checksum_holds(memoryview(source))
