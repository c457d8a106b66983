"""Reading record batch headers as the log stores them (srm_harness.log_batches), on batches
aiokafka builds: no broker needed for the parsing."""

from __future__ import annotations

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from srm_harness.log_batches import _parse


def _batch(codec: int, offsets: list[int]) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )  # fmt: skip
    for offset in offsets:
        builder.append(offset, timestamp=1000 + offset, key=b"k", value=b"v" * 100, headers=[])
    return bytes(builder.build())


def test_batches_give_codec_offsets_record_count_and_size() -> None:
    first, second = _batch(1, [0, 2, 4]), _batch(0, [0, 1])
    read = _parse(first + second)
    assert [(b.codec, b.records, b.next_offset, b.size) for b in read] == [
        ("gzip", 3, 5, len(first)),
        ("none", 2, 2, len(second)),
    ]
    assert _parse(first + second[:20]) == read[:1], "a cut-off batch at the end is left out"


def test_a_damaged_batch_fails_the_read() -> None:
    data = bytearray(_batch(0, [0, 1]))
    data[-1] ^= 0xFF
    with pytest.raises(RuntimeError, match="CRC"):
        _parse(bytes(data))
