"""The copy slot's own Kafka protocol layer, its pure part (:mod:`srm_driver.copier.wire`):
every request against golden bytes written by hand from Kafka's message schemas, and
against aiokafka's encoders where aiokafka has the same version; every answer parsed from
hand-built bytes, with the record batches left as slices of the answer's buffer."""

from __future__ import annotations

import struct

import pytest
from aiokafka.protocol.fetch import FetchRequest_v11, FetchResponse_v11
from aiokafka.protocol.produce import ProduceRequest_v8, ProduceResponse_v8
from srm_driver.copier.wire import apis, fetch, messages, produce
from srm_driver.copier.wire.errors import BrokerError, WireError
from srm_driver.copier.wire.primitives import Reader, Writer


def _s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_reader_reads_the_primitives_and_refuses_to_run_past_the_end() -> None:
    raw = bytearray(b"\x01\xff\xfe\x00\x00\x00\x07" + _s("hi") + b"\xff\xff\x00\x00\x00\x02ab")
    reader = Reader(memoryview(raw))
    assert (reader.int8(), reader.int16(), reader.int32()) == (1, -2, 7)
    assert (reader.string(), reader.nullable_string()) == ("hi", None)
    field = reader.nullable_bytes()
    assert bytes(field) == b"ab" and reader.done()
    raw[-1] = ord("z")  # a bytes field is a view of the buffer, not a copy
    assert bytes(field) == b"az"
    with pytest.raises(WireError, match="ends at byte 19"):
        reader.int16()
    with pytest.raises(WireError, match="overruns"):
        Reader(memoryview(b"\x00\x00\x00\x09abc")).nullable_bytes()
    with pytest.raises(WireError, match="null string"):
        Reader(memoryview(b"\xff\xff")).string()


def test_writer_writes_what_the_reader_reads() -> None:
    written = Writer().int8(-1).int16(300).int32(-5).int64(1 << 40).string("t")
    written.nullable_string(None).boolean(True).int32_array([1, 2])
    reader = Reader(memoryview(bytes(written.buffer)))
    assert [reader.int8(), reader.int16(), reader.int32(), reader.int64()] == [-1, 300, -5, 1 << 40]
    assert [reader.string(), reader.nullable_string(), reader.boolean()] == ["t", None, True]
    assert reader.int32_array() == [1, 2] and reader.done()


def test_a_broker_without_one_of_the_versions_is_named_with_its_range() -> None:
    ranges = {api.key: (0, api.version) for api in apis.SPOKEN}
    assert apis.unsupported(ranges) == []
    ranges[apis.FETCH.key] = (12, 17)
    del ranges[apis.INIT_PRODUCER_ID.key]
    assert apis.unsupported(ranges) == [
        "Fetch v11 (broker: 12-17)",
        "InitProducerId v1 (broker: none)",
    ]


def test_api_versions_answer() -> None:
    raw = (
        b"\x00\x00"
        + b"\x00\x00\x00\x02"
        + b"\x00\x00\x00\x03\x00\x0c"
        + b"\x00\x01\x00\x04\x00\x11"
    )
    raw += b"\x00\x00\x00\x00"  # throttle time
    assert messages.api_versions_response(memoryview(raw)) == (0, {0: (3, 12), 1: (4, 17)})


def test_metadata_request_and_answer() -> None:
    assert messages.metadata_request(["ab"]) == b"\x00\x00\x00\x01" + _s("ab") + b"\x00\x00\x00"
    assert messages.metadata_request(None) == b"\xff\xff\xff\xff\x00\x00\x00"
    raw = b"\x00\x00\x00\x00"  # throttle
    raw += b"\x00\x00\x00\x01" + b"\x00\x00\x00\x02" + _s("h") + b"\x00\x00\x23\x84" + b"\xff\xff"
    raw += _s("cluster") + b"\x00\x00\x00\x02"  # cluster id, controller
    raw += b"\x00\x00\x00\x01" + b"\x00\x00" + _s("t") + b"\x00"  # one topic
    raw += b"\x00\x00\x00\x01" + b"\x00\x00" + b"\x00\x00\x00\x03" + b"\x00\x00\x00\x02"
    raw += b"\x00\x00\x00\x05" + b"\x00\x00\x00\x01\x00\x00\x00\x02" * 2 + b"\x00\x00\x00\x00"
    raw += b"\x80\x00\x00\x00" + b"\x80\x00\x00\x00"  # authorized operations
    answer = messages.metadata_response(memoryview(raw))
    assert answer.brokers == {2: messages.Broker(2, "h", 9092)}
    assert answer.brokers[2].address == "h:9092"
    assert answer.topics == {"t": (0, {3: messages.PartitionLeader(3, 0, 2, 5)})}


def test_init_producer_id_request_and_answer() -> None:
    assert messages.init_producer_id_request(60_000) == b"\xff\xff\x00\x00\xea\x60"
    raw = b"\x00\x00\x00\x00\x00\x00" + struct.pack(">qh", 4000, 3)
    assert messages.init_producer_id_response(memoryview(raw)) == (0, 4000, 3)


def test_list_offsets_request_and_answer() -> None:
    # (aiokafka's ListOffsets v5 writes the leader epoch as an int64; Kafka's schema and
    # this layer write an int32, so the golden bytes are Kafka's.)
    ours = messages.list_offsets_request("t", {0: messages.LATEST, 1: messages.EARLIEST})
    golden = b"\xff\xff\xff\xff\x01" + b"\x00\x00\x00\x01" + _s("t") + b"\x00\x00\x00\x02"
    golden += struct.pack(">iiq", 0, -1, -1) + struct.pack(">iiq", 1, -1, -2)
    assert ours == golden
    raw = b"\x00\x00\x00\x00" + b"\x00\x00\x00\x01" + _s("t") + b"\x00\x00\x00\x01"
    raw += struct.pack(">ihqqi", 1, 0, -1, 42, 7)
    assert messages.list_offsets_response(memoryview(raw)) == {("t", 1): (0, 42)}


def test_fetch_request_matches_golden_bytes_and_aiokafka() -> None:
    ours = fetch.fetch_request(
        {"t": [(0, 5)]}, max_wait_ms=500, min_bytes=1, max_bytes=100, partition_max_bytes=1000
    )
    golden = struct.pack(">iiiibii", -1, 500, 1, 100, 1, 0, -1) + b"\x00\x00\x00\x01" + _s("t")
    golden += b"\x00\x00\x00\x01" + struct.pack(">iiqqi", 0, -1, 5, -1, 1000)
    golden += b"\x00\x00\x00\x00" + _s("")  # no forgotten topics, empty rack
    assert ours == golden
    assert (
        ours
        == FetchRequest_v11(
            -1, 500, 1, 100, 1, 0, -1, [("t", [(0, -1, 5, -1, 1000)])], [], ""
        ).encode()
    )


def test_fetch_request_in_a_session_names_its_id_epoch_and_forgotten_partitions() -> None:
    ours = fetch.fetch_request(
        {"t": [(0, 5)]}, max_wait_ms=500, min_bytes=1, max_bytes=100, partition_max_bytes=1000,
        session=(42, 3), forgotten={"u": [1, 2]},
    )  # fmt: skip
    assert (
        ours
        == FetchRequest_v11(
            -1, 500, 1, 100, 1, 42, 3, [("t", [(0, -1, 5, -1, 1000)])], [("u", [1, 2])], ""
        ).encode()
    )
    assert fetch.session_of(memoryview(struct.pack(">ihi", 0, 0, 42))) == 42


def _fetch_answer() -> bytearray:
    raw = struct.pack(">ihi", 0, 0, 0) + b"\x00\x00\x00\x01" + _s("t") + b"\x00\x00\x00\x02"
    raw += struct.pack(">ihqqq", 0, 0, 10, 9, 0) + b"\x00\x00\x00\x01" + struct.pack(">qq", 77, 3)
    raw += struct.pack(">i", -1) + b"\x00\x00\x00\x04" + b"BTCH"
    raw += struct.pack(">ihqqq", 1, 6, -1, -1, -1) + b"\xff\xff\xff\xff" + struct.pack(">i", -1)
    raw += b"\xff\xff\xff\xff"  # null records
    return bytearray(raw)


def test_fetch_answer_parses_with_the_records_as_a_slice_of_its_buffer() -> None:
    raw = _fetch_answer()
    error, found = fetch.fetch_response(memoryview(raw))
    assert error == 0
    first, second = found
    assert (first.topic, first.partition, first.high_watermark, first.last_stable_offset) == (
        "t",
        0,
        10,
        9,
    )
    assert first.aborted == ((77, 3),) and bytes(first.records) == b"BTCH"
    assert first.records.obj is raw  # not copied out of the answer
    assert (second.partition, second.error, bytes(second.records)) == (1, 6, b"")
    decoded = FetchResponse_v11.decode(bytes(raw))  # aiokafka reads the same bytes the same way
    assert decoded.topics[0][1][0][-1] == b"BTCH" and decoded.topics[0][1][1][1] == 6
    with pytest.raises(
        BrokerError, match=r"broker b:1: Fetch of t-1: error 6 NOT_LEADER_OR_FOLLOWER"
    ):
        fetch.raise_refusal("b:1", error, found)
    with pytest.raises(BrokerError, match=r"broker b:1: Fetch: error 7 REQUEST_TIMED_OUT"):
        fetch.raise_refusal("b:1", 7, [])


def test_produce_request_sends_the_batches_own_buffers_and_matches_aiokafka() -> None:
    header, records = bytearray(b"HEAD"), memoryview(bytearray(b"records"))
    parts = produce.produce_request({"t": [(2, [header, records]), (3, [b"X"])]}, timeout_ms=1000)
    assert any(part is header for part in parts) and any(part is records for part in parts)
    golden = b"\xff\xff" + b"\xff\xff" + b"\x00\x00\x03\xe8" + b"\x00\x00\x00\x01" + _s("t")
    golden += b"\x00\x00\x00\x02" + struct.pack(">ii", 2, 11) + b"HEADrecords"
    golden += struct.pack(">ii", 3, 1) + b"X"
    joined = b"".join(bytes(part) for part in parts)
    assert joined == golden
    assert (
        joined
        == ProduceRequest_v8(None, -1, 1000, [("t", [(2, b"HEADrecords"), (3, b"X")])]).encode()
    )


def test_produce_answer_and_a_refusal_in_the_brokers_words() -> None:
    raw = b"\x00\x00\x00\x01" + _s("t") + b"\x00\x00\x00\x02"
    raw += struct.pack(">ihqqq", 0, 0, 100, -1, 0) + b"\x00\x00\x00\x00" + b"\xff\xff"
    raw += struct.pack(">ihqqq", 1, 2, -1, -1, -1) + b"\x00\x00\x00\x01" + struct.pack(">i", 0)
    raw += _s("bad crc") + _s("corrupt")
    raw += b"\x00\x00\x00\x00"  # throttle time
    found = produce.produce_response(memoryview(raw))
    assert [(p.partition, p.error, p.base_offset) for p in found] == [(0, 0, 100), (1, 2, -1)]
    assert found[1].record_errors == ((0, "bad crc"),) and found[1].message == "corrupt"
    assert ProduceResponse_v8.decode(raw).topics[0][1][1][1] == 2  # aiokafka agrees
    produce.raise_refusal("b:1", found[:1])  # no error: nothing raised
    with pytest.raises(BrokerError) as refused:
        produce.raise_refusal("b:1", found)
    assert str(refused.value) == (
        "broker b:1: Produce to t-1: error 2 CORRUPT_MESSAGE (corrupt; record 0: bad crc)"
    )
    assert not refused.value.retriable
