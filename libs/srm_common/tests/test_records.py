"""Golden-vector and property tests of the MM2 record and Connect-offset codecs."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from srm_common.domain.connect_offsets import (
    CHECKPOINT_CONNECTOR,
    HEARTBEAT_CONNECTOR,
    SOURCE_CONNECTOR,
    SourceOffset,
    checkpoint_offset_key,
    decode_source_offset,
    heartbeat_offset_key,
    source_offset_key,
    source_offset_value,
)
from srm_common.domain.records import (
    CHECKPOINTS_PARTITION,
    HEARTBEATS_PARTITION,
    MAX_STRING_BYTES,
    OFFSET_SYNCS_PARTITION,
    Checkpoint,
    Heartbeat,
    OffsetSync,
    decode_kafka_string,
    encode_kafka_string,
)
from srm_common.errors import RecordFormatError, SrmError

GOLDEN_PATH = Path(__file__).parent / "golden" / "mm2_records.json"
GOLDEN = json.loads(GOLDEN_PATH.read_text(encoding="utf-8"))

Record = Heartbeat | Checkpoint | OffsetSync
KINDS: dict[str, type[Heartbeat] | type[Checkpoint] | type[OffsetSync]] = {
    "heartbeat": Heartbeat,
    "checkpoint": Checkpoint,
    "offset_sync": OffsetSync,
}
SECTIONS = {"heartbeats": Heartbeat, "checkpoints": Checkpoint, "offset_syncs": OffsetSync}
RECORD_FIELDS = {
    "heartbeats": ("source_cluster_alias", "target_cluster_alias", "timestamp_ms"),
    "checkpoints": (
        "consumer_group_id",
        "topic",
        "partition",
        "upstream_offset",
        "downstream_offset",
        "metadata",
    ),
    "offset_syncs": ("topic", "partition", "upstream_offset", "downstream_offset"),
}
GOLDEN_RECORDS = [
    pytest.param(section, vector, id=vector["name"])
    for section in SECTIONS
    for vector in GOLDEN[section]
]


def build_record(section: str, vector: dict[str, object]) -> Record:
    fields = {name: vector[name] for name in RECORD_FIELDS[section]}
    return SECTIONS[section](**fields)  # type: ignore[arg-type]


def build_connect_key(vector: dict[str, object]) -> bytes:
    fields = vector["partition"]
    assert isinstance(fields, dict)
    connector = vector["connector"]
    if connector == SOURCE_CONNECTOR:
        return source_offset_key(fields["cluster"], fields["topic"], fields["partition"])
    if connector == CHECKPOINT_CONNECTOR:
        return checkpoint_offset_key(fields["group"], fields["topic"], fields["partition"])
    assert connector == HEARTBEAT_CONNECTOR, f"golden file names unknown connector {connector}"
    return heartbeat_offset_key(fields["sourceClusterAlias"], fields["targetClusterAlias"])


# --- golden vectors -------------------------------------------------------------------


@pytest.mark.parametrize(("section", "vector"), GOLDEN_RECORDS)
def test_encode_matches_golden_bytes_when_record_is_valid(
    section: str, vector: dict[str, object]
) -> None:
    record = build_record(section, vector)
    assert record.encode_key().hex() == vector["key_hex"], f"{record} key bytes differ from MM2's"
    assert record.encode_value().hex() == vector["value_hex"], (
        f"{record} value bytes differ from MM2's"
    )


@pytest.mark.parametrize(("section", "vector"), GOLDEN_RECORDS)
def test_decode_returns_golden_fields_when_bytes_are_golden(
    section: str, vector: dict[str, object]
) -> None:
    decoded = SECTIONS[section].decode(
        bytes.fromhex(str(vector["key_hex"])), bytes.fromhex(str(vector["value_hex"]))
    )
    assert decoded == build_record(section, vector), f"golden {vector['name']} decoded wrongly"


def test_heartbeat_key_is_reference_example_when_aliases_are_a_and_b() -> None:
    assert Heartbeat("A", "B", 0).encode_key() == bytes([0, 1, 0x41, 0, 1, 0x42]), (
        "Heartbeat(A, B) key must be 00 01 41 00 01 42 (mm2-semantics.md section 4)"
    )


@pytest.mark.parametrize(
    "vector", [pytest.param(v, id=v["name"]) for v in GOLDEN["trailing_bytes"]]
)
def test_decode_ignores_trailing_bytes_when_record_has_extra_bytes(
    vector: dict[str, object],
) -> None:
    decoded = KINDS[str(vector["kind"])].decode(
        bytes.fromhex(str(vector["key_hex"])), bytes.fromhex(str(vector["value_hex"]))
    )
    assert asdict(decoded) == vector["expected"], "positional readers must ignore trailing bytes"


@pytest.mark.parametrize("vector", [pytest.param(v, id=v["name"]) for v in GOLDEN["malformed"]])
def test_decode_raises_record_format_error_when_bytes_are_malformed(
    vector: dict[str, object],
) -> None:
    with pytest.raises(RecordFormatError):
        KINDS[str(vector["kind"])].decode(
            bytes.fromhex(str(vector["key_hex"])), bytes.fromhex(str(vector["value_hex"]))
        )


@pytest.mark.parametrize(
    "vector", [pytest.param(v, id=v["name"]) for v in GOLDEN["connect_offsets"]]
)
def test_connect_offset_key_matches_jackson_bytes_when_fields_are_golden(
    vector: dict[str, object],
) -> None:
    key = build_connect_key(vector)
    assert key.hex() == vector["key_hex"], f"{key!r} differs from Jackson's {vector['key_text']}"
    assert source_offset_value(int(str(vector["offset"]))).hex() == vector["value_hex"], (
        "offset value must be compact {'offset':N}"
    )


@pytest.mark.parametrize(
    "vector", [pytest.param(v, id=v["name"]) for v in GOLDEN["connect_offsets"]]
)
def test_decode_source_offset_reads_golden_when_key_is_golden(vector: dict[str, object]) -> None:
    decoded = decode_source_offset(
        bytes.fromhex(str(vector["key_hex"])), bytes.fromhex(str(vector["value_hex"]))
    )
    fields = vector["partition"]
    assert isinstance(fields, dict)
    if vector["connector"] != SOURCE_CONNECTOR:
        assert decoded is None, "keys of other connectors must decode to None"
        return
    expected = SourceOffset(
        fields["cluster"], fields["topic"], fields["partition"], int(str(vector["offset"]))
    )
    assert decoded == expected, f"golden {vector['name']} decoded wrongly"


# --- explicit edge cases --------------------------------------------------------------


def test_partition_constants_are_zero_when_topics_are_mm2_internal() -> None:
    assert (HEARTBEATS_PARTITION, CHECKPOINTS_PARTITION, OFFSET_SYNCS_PARTITION) == (0, 0, 0), (
        "MM2 writes and reads its internal records on partition 0"
    )


@pytest.mark.parametrize("kind", [Heartbeat, Checkpoint])
def test_decode_names_version_when_version_is_not_zero(
    kind: type[Heartbeat] | type[Checkpoint],
) -> None:
    record = Heartbeat("A", "B", 1) if kind is Heartbeat else Checkpoint("g", "A.t", 0, 1, 1)
    value = b"\x00\x01" + record.encode_value()[2:]
    with pytest.raises(RecordFormatError, match="version 1"):
        kind.decode(record.encode_key(), value)


def test_decode_reports_field_and_position_when_value_is_truncated() -> None:
    with pytest.raises(RecordFormatError, match=r"'timestamp_ms' \(INT64\) at byte 2 needs 8"):
        Heartbeat.decode(b"\x00\x01A\x00\x01B", b"\x00\x00\x00")


@pytest.mark.parametrize("part", ["key", "value"])
def test_decode_raises_record_format_error_when_key_or_value_is_null(part: str) -> None:
    record = OffsetSync("t", 0, 1, 1)
    key = None if part == "key" else record.encode_key()
    value = None if part == "value" else record.encode_value()
    with pytest.raises(RecordFormatError, match="null"):
        OffsetSync.decode(key, value)


def test_encode_accepts_string_when_utf8_is_exactly_32767_bytes() -> None:
    encoded = encode_kafka_string("x" * MAX_STRING_BYTES)
    assert encoded[:2] == b"\x7f\xff", "a 32767-byte STRING must carry length 7f ff"
    assert decode_kafka_string(encoded) == ("x" * MAX_STRING_BYTES, MAX_STRING_BYTES + 2)


@pytest.mark.parametrize("text", ["x" * 32768, "é" * 16384, "😀" * 8192])
def test_encode_raises_record_format_error_when_utf8_exceeds_32767_bytes(text: str) -> None:
    with pytest.raises(RecordFormatError, match="32767"):
        encode_kafka_string(text)


def test_record_refuses_construction_when_string_field_is_too_long() -> None:
    with pytest.raises(RecordFormatError, match="checkpoint.metadata"):
        Checkpoint("g", "A.t", 0, 1, 1, "m" * 40000)


def test_encode_raises_record_format_error_when_string_has_lone_surrogate() -> None:
    with pytest.raises(RecordFormatError, match="surrogate"):
        encode_kafka_string("a\ud800b")


@pytest.mark.parametrize(
    "build",
    [
        lambda: OffsetSync("t", 2**31, 0, 0),
        lambda: OffsetSync("t", 0, 2**63, 0),
        lambda: Checkpoint("g", "t", -(2**31) - 1, 0, 0),
        lambda: Heartbeat("A", "B", -(2**63) - 1),
    ],
)
def test_record_refuses_construction_when_integer_exceeds_java_width(
    build: Callable[[], object],
) -> None:
    with pytest.raises(RecordFormatError, match="does not fit"):
        build()


def test_record_format_error_is_srm_error_when_raised() -> None:
    assert issubclass(RecordFormatError, SrmError), "every deliberate error belongs to the tree"


def test_decode_kafka_string_reads_from_position_when_position_is_given() -> None:
    data = bytes.fromhex("000141000142")
    assert decode_kafka_string(data, 3) == ("B", 6), "second STRING of A,B key is 'B' ending at 6"


def test_connect_key_escapes_like_jackson_when_group_has_special_characters() -> None:
    key = checkpoint_offset_key('q"\\\x00\x1f\x7f/\u2028é😀\t', "A.t", 0)
    expected = (
        '["MirrorCheckpointConnector",{"partition":0,"topic":"A.t",'
        '"group":"q\\"\\\\\\u0000\\u001F\x7f/\u2028é\\uD83D\\uDE00\\t"}]'
    )
    assert key == expected.encode(), (
        "Jackson escapes C0 controls in upper-case hex and astral characters as surrogate"
        " pairs, and writes DEL, '/', U+2028 and non-ASCII raw"
    )


def test_decode_source_offset_returns_none_offset_when_value_is_tombstone() -> None:
    decoded = decode_source_offset(source_offset_key("A", "t", 1), None)
    assert decoded == SourceOffset("A", "t", 1, None), "a null value means the offset was reset"


def test_decode_source_offset_matches_custom_name_when_connector_is_renamed() -> None:
    key = source_offset_key("A", "t", 0, connector="mm2-source-A-B")
    assert decode_source_offset(key, b'{"offset":5}') is None, "default name must not match"
    decoded = decode_source_offset(key, b'{"offset":5}', connector="mm2-source-A-B")
    assert decoded == SourceOffset("A", "t", 0, 5), "renamed connector's key must decode"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"not json", b'{"offset":1}'),
        (b'{"cluster":"A"}', b'{"offset":1}'),
        (b'["MirrorSourceConnector"]', b'{"offset":1}'),
        (b'["MirrorSourceConnector",{"cluster":"A","partition":true,"topic":"t"}]', b"{}"),
        (b'["MirrorSourceConnector",{"cluster":"A","topic":"t"}]', b'{"offset":1}'),
        (source_offset_key("A", "t", 0), b'{"offset":"1"}'),
        (source_offset_key("A", "t", 0), b"[1]"),
        (source_offset_key("A", "t", 0), b"\xff"),
        (b'["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"t"}]', b'{"offset":1e3}'),
    ],
)
def test_decode_source_offset_raises_record_format_error_when_json_is_malformed(
    key: bytes, value: bytes
) -> None:
    with pytest.raises(RecordFormatError):
        decode_source_offset(key, value)


# --- properties -----------------------------------------------------------------------

kafka_text = st.text(max_size=40)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
records = st.one_of(
    st.builds(Heartbeat, kafka_text, kafka_text, int64),
    st.builds(Checkpoint, kafka_text, kafka_text, int32, int64, int64, kafka_text),
    st.builds(OffsetSync, kafka_text, int32, int64, int64),
)


@given(records)
def test_decode_returns_original_when_record_was_encoded(record: Record) -> None:
    decoded = type(record).decode(record.encode_key(), record.encode_value())
    assert decoded == record, "decode(encode(r)) must give r back"


@given(records, st.binary(max_size=8), st.binary(max_size=8))
def test_decode_returns_original_when_encoding_has_trailing_bytes(
    record: Record, key_tail: bytes, value_tail: bytes
) -> None:
    decoded = type(record).decode(
        record.encode_key() + key_tail, record.encode_value() + value_tail
    )
    assert decoded == record, "trailing bytes must not change the decoded record"


@given(records, st.data())
def test_decode_raises_record_format_error_when_encoding_is_cut_short(
    record: Record, data: st.DataObject
) -> None:
    key, value = record.encode_key(), record.encode_value()
    if data.draw(st.booleans(), label="cut key"):
        key = key[: data.draw(st.integers(0, len(key) - 1), label="key length")]
    else:
        value = value[: data.draw(st.integers(0, len(value) - 1), label="value length")]
    with pytest.raises(RecordFormatError):
        type(record).decode(key, value)


@given(st.sampled_from(list(KINDS.values())), st.binary(max_size=48), st.binary(max_size=48))
def test_decode_raises_only_record_format_error_when_bytes_are_arbitrary(
    kind: type[Heartbeat] | type[Checkpoint] | type[OffsetSync], key: bytes, value: bytes
) -> None:
    try:
        kind.decode(key, value)
    except RecordFormatError:
        pass


@given(kafka_text, kafka_text, st.integers(0, 2**31 - 1), int64)
def test_decode_source_offset_returns_original_when_offset_was_encoded(
    cluster: str, topic: str, partition: int, offset: int
) -> None:
    key = source_offset_key(cluster, topic, partition)
    decoded = decode_source_offset(key, source_offset_value(offset))
    assert decoded == SourceOffset(cluster, topic, partition, offset), "round trip failed"
    assert json.loads(key) == [
        SOURCE_CONNECTOR,
        {"cluster": cluster, "partition": partition, "topic": topic},
    ], "the key must stay valid JSON whatever the names contain"


@given(kafka_text, kafka_text, int32)
def test_checkpoint_offset_key_is_valid_json_when_names_are_arbitrary(
    group: str, topic: str, partition: int
) -> None:
    parsed = json.loads(checkpoint_offset_key(group, topic, partition))
    assert parsed == [
        CHECKPOINT_CONNECTOR,
        {"partition": partition, "topic": topic, "group": group},
    ]
    assert list(parsed[1]) == ["partition", "topic", "group"], "Java HashMap order is fixed"
