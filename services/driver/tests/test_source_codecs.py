"""The codec of a source topic, from its config or a record batch header
(:mod:`srm_driver.source_codecs`)."""

from __future__ import annotations

import struct

from srm_driver.source_codecs import codec_of_config, newest_codec


def _batch(codec: int, *, control: bool = False, records: bytes = b"r" * 40) -> bytes:
    attributes = codec | (0x20 if control else 0)
    rest = struct.pack(">ihi", 0, attributes, 0) + b"\0" * 36 + records
    # baseOffset, batchLength (from the leader epoch on), leader epoch, magic 2, crc, rest.
    body = struct.pack(">ib", 0, 2) + rest
    return struct.pack(">qi", 0, len(body)) + body


def test_the_newest_data_batch_names_the_codec() -> None:
    assert newest_codec(_batch(4)) == "zstd"
    assert newest_codec(_batch(1) + _batch(3)) == "lz4"
    assert newest_codec(_batch(4) + _batch(0)) == "zstd", "a batch left uncompressed says nothing"
    assert newest_codec(_batch(0) + _batch(0)) == "none"
    assert newest_codec(_batch(2) + _batch(0, control=True)) == "snappy", "a marker is skipped"
    assert newest_codec(_batch(4) + _batch(3)[:30]) == "lz4", "a cut-off batch has its header"
    assert newest_codec(_batch(4)[:20]) is None and newest_codec(b"") is None


def test_a_topic_config_naming_a_codec_is_that_codec() -> None:
    assert codec_of_config("zstd") == "zstd" and codec_of_config("uncompressed") == "none"
    assert codec_of_config("producer") is None and codec_of_config(None) is None
