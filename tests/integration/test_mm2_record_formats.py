"""Cross-check of SRM's MM2 record codecs against MirrorMaker 2's own Java classes."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import asdict, fields
from pathlib import Path

import pytest
from srm_common.domain.connect_offsets import (
    CHECKPOINT_CONNECTOR,
    HEARTBEAT_CONNECTOR,
    SOURCE_CONNECTOR,
    checkpoint_offset_key,
    decode_source_offset,
    heartbeat_offset_key,
    source_offset_key,
    source_offset_value,
)
from srm_common.domain.records import Checkpoint, Heartbeat, OffsetSync
from srm_common.errors import RecordFormatError

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
JAVA_ORACLE = Path(__file__).parent / "java" / "Mm2RecordFormats.java"
GOLDEN_PATH = REPO / "libs" / "srm_common" / "tests" / "golden" / "mm2_records.json"
GOLDEN = json.loads(GOLDEN_PATH.read_text(encoding="utf-8"))

Record = Heartbeat | Checkpoint | OffsetSync
KINDS: dict[str, type[Heartbeat] | type[Checkpoint] | type[OffsetSync]] = {
    "heartbeat": Heartbeat,
    "checkpoint": Checkpoint,
    "offset_sync": OffsetSync,
}
SECTIONS = {"heartbeats": "heartbeat", "checkpoints": "checkpoint", "offset_syncs": "offset_sync"}

# Oracle output: section ("records", "decoded", "connect_offsets") -> vector name -> entry.
JavaResult = dict[str, dict[str, dict[str, object]]]
Oracle = Callable[[Path], JavaResult]


@pytest.fixture(scope="module")
def java_oracle(tmp_path_factory: pytest.TempPathFactory, java_and_jars) -> Oracle:  # type: ignore[no-untyped-def]
    """Runs Mm2RecordFormats.java (MM2's own classes) over a vectors file."""
    java, jars = java_and_jars
    if not any(jars.glob("connect-mirror-[0-9]*.jar")):
        pytest.skip(f"{jars} holds no connect-mirror jar")
    folder = tmp_path_factory.mktemp("mm2-oracle")

    def run(vectors: Path) -> JavaResult:
        out = folder / f"{vectors.stem}.java.json"
        command = [java, "-cp", f"{jars}/*", str(JAVA_ORACLE), str(vectors), str(out)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, f"MM2 oracle failed ({done.returncode}):\n{done.stderr}"
        result = json.loads(out.read_text(encoding="utf-8"))
        return {
            section: {entry["name"]: entry for entry in result[section]}
            for section in ("records", "decoded", "connect_offsets")
        }

    return run


@pytest.fixture(scope="module")
def golden_from_java(java_oracle: Oracle) -> JavaResult:
    return java_oracle(GOLDEN_PATH)


def _record(kind: str, values: dict[str, object]) -> Record:
    cls = KINDS[kind]
    return cls(**{field.name: values[field.name] for field in fields(cls)})  # type: ignore[arg-type]


def _connect_key(connector: str, partition: dict[str, object]) -> bytes:
    """Our key for MM2's partition map (its field names say which connector wrote it)."""
    if "cluster" in partition:
        return source_offset_key(
            str(partition["cluster"]),
            str(partition["topic"]),
            int(str(partition["partition"])),
            connector=connector,
        )
    if "group" in partition:
        return checkpoint_offset_key(
            str(partition["group"]),
            str(partition["topic"]),
            int(str(partition["partition"])),
            connector=connector,
        )
    return heartbeat_offset_key(
        str(partition["sourceClusterAlias"]),
        str(partition["targetClusterAlias"]),
        connector=connector,
    )


GOLDEN_RECORDS = [
    pytest.param(kind, vector, id=vector["name"])
    for section, kind in SECTIONS.items()
    for vector in GOLDEN[section]
]


@pytest.mark.parametrize(("kind", "vector"), GOLDEN_RECORDS)
def test_mm2_writes_golden_bytes_when_given_golden_fields(
    golden_from_java: JavaResult, kind: str, vector: dict[str, object]
) -> None:
    java = golden_from_java["records"][str(vector["name"])]
    ours = _record(kind, vector)
    assert java["key_hex"] == vector["key_hex"] == ours.encode_key().hex(), (
        f"MM2, golden file and our codec disagree on the key of {vector['name']}"
    )
    assert java["value_hex"] == vector["value_hex"] == ours.encode_value().hex(), (
        f"MM2, golden file and our codec disagree on the value of {vector['name']}"
    )


DECODE_VECTORS = [
    pytest.param(kind, vector, vector, id=vector["name"])
    for kind, vector in ((kind, v) for section, kind in SECTIONS.items() for v in GOLDEN[section])
] + [
    pytest.param(vector["kind"], vector, vector["expected"], id=vector["name"])
    for vector in GOLDEN["trailing_bytes"]
]


@pytest.mark.parametrize(("kind", "vector", "expected"), DECODE_VECTORS)
def test_mm2_reads_golden_fields_when_given_golden_bytes(
    golden_from_java: JavaResult,
    kind: str,
    vector: dict[str, object],
    expected: dict[str, object],
) -> None:
    java = golden_from_java["decoded"][str(vector["name"])]
    ours = KINDS[kind].decode(
        bytes.fromhex(str(vector["key_hex"])), bytes.fromhex(str(vector["value_hex"]))
    )
    want = asdict(_record(kind, expected))
    assert java.get("fields") == want, f"MM2 read {vector['name']} as {java}, golden says {want}"
    assert asdict(ours) == want, f"our codec read {vector['name']} as {ours}, MM2 as {want}"


@pytest.mark.parametrize("vector", [pytest.param(v, id=v["name"]) for v in GOLDEN["malformed"]])
def test_mm2_refuses_malformed_bytes_when_golden_says_java_rejects(
    golden_from_java: JavaResult, vector: dict[str, object]
) -> None:
    java = golden_from_java["decoded"][str(vector["name"])]
    assert ("error" in java) == vector["java_rejects"], (
        f"golden file mis-states MM2's reaction to {vector['name']}: MM2 gave {java}"
    )
    with pytest.raises(RecordFormatError):
        KINDS[str(vector["kind"])].decode(
            bytes.fromhex(str(vector["key_hex"])), bytes.fromhex(str(vector["value_hex"]))
        )


@pytest.mark.parametrize(
    "vector", [pytest.param(v, id=v["name"]) for v in GOLDEN["connect_offsets"]]
)
def test_jsonconverter_writes_our_offset_bytes_when_map_is_built_by_mm2(
    golden_from_java: JavaResult, vector: dict[str, object]
) -> None:
    java = golden_from_java["connect_offsets"][str(vector["name"])]
    partition = vector["partition"]
    assert isinstance(partition, dict)
    ours = _connect_key(str(vector["connector"]), partition)
    assert java["key_hex"] == vector["key_hex"] == ours.hex(), (
        f"Jackson, golden file and our codec disagree on the offsets key {vector['key_text']}"
        f" (MM2 built a {java['map_class']})"
    )
    value = source_offset_value(int(str(vector["offset"])))
    assert java["value_hex"] == vector["value_hex"] == value.hex(), "offset values disagree"
    assert java["decoded_key"] == [vector["connector"], partition], "Jackson read our key otherwise"


def _generated_vectors() -> dict[str, list[dict[str, object]]]:
    """Vectors produced by our codec over the whole of Unicode, for MM2 to judge."""
    bmp = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF)
    astral = "".join(chr(c) for c in (0x10000, 0x1F600, 0x1F9D1, 0xE0001, 0x10FFFF))
    texts = [bmp[i : i + 9000] for i in range(0, len(bmp), 9000)] + [astral, "x" * 32767]
    records: list[Record] = []
    for i, text in enumerate(texts):
        records += [
            Heartbeat(text, astral + str(i), -i),
            Checkpoint(text, f"A.t{i}", i, 2**63 - 1 - i, i, text[::-1]),
            OffsetSync(text, -i, -(2**63) + i, 2**40 + i),
        ]
    out: dict[str, list[dict[str, object]]] = {s: [] for s in (*SECTIONS, "connect_offsets")}
    for i, record in enumerate(records):
        section = next(s for s, k in SECTIONS.items() if KINDS[k] is type(record))
        out[section].append(
            {
                "name": f"gen_{section}_{i}",
                **asdict(record),
                "key_hex": record.encode_key().hex(),
                "value_hex": record.encode_value().hex(),
            }
        )
    # Connect keys are not length-limited and may hold lone surrogates (Java strings can).
    lone = "\ud800 \udfff \udbff"
    partitions = [
        (SOURCE_CONNECTOR, {"cluster": text, "partition": i, "topic": "t"})
        for i, text in enumerate([*texts[:-1], lone])
    ] + [
        (CHECKPOINT_CONNECTOR, {"partition": 1, "topic": "A.t", "group": bmp}),
        (HEARTBEAT_CONNECTOR, {"sourceClusterAlias": astral, "targetClusterAlias": lone}),
    ]
    for i, (connector, partition) in enumerate(partitions):
        key = _connect_key(connector, partition)
        out["connect_offsets"].append(
            {
                "name": f"gen_offsets_{i}",
                "connector": connector,
                "partition": partition,
                "offset": 2**62 + i,
                "key_hex": key.hex(),
                "value_hex": source_offset_value(2**62 + i).hex(),
            }
        )
    return out


def test_mm2_agrees_with_our_codec_when_strings_cover_all_of_unicode(
    java_oracle: Oracle, tmp_path: Path
) -> None:
    vectors = _generated_vectors()
    path = tmp_path / "generated.json"
    # ASCII-only JSON: lone surrogates survive as \uXXXX escapes into Java strings.
    path.write_text(json.dumps(vectors), encoding="ascii")
    java = java_oracle(path)
    for section, kind in SECTIONS.items():
        for vector in vectors[section]:
            name = str(vector["name"])
            mm2_bytes = (java["records"][name]["key_hex"], java["records"][name]["value_hex"])
            assert mm2_bytes == (vector["key_hex"], vector["value_hex"]), (
                f"MM2 wrote {name} otherwise"
            )
            names = {field.name for field in fields(KINDS[kind])}
            expected = {k: v for k, v in vector.items() if k in names}
            assert java["decoded"][name].get("fields") == expected, f"MM2 read {name} otherwise"
    for vector in vectors["connect_offsets"]:
        name = str(vector["name"])
        assert java["connect_offsets"][name]["key_hex"] == vector["key_hex"], (
            f"Jackson escapes {name} differently from our connect-offsets writer"
        )
        decoded = decode_source_offset(bytes.fromhex(str(vector["key_hex"])), b'{"offset":1}')
        if vector["connector"] == SOURCE_CONNECTOR:
            assert decoded is not None and decoded.cluster == vector["partition"]["cluster"], (
                f"our reader lost the cluster alias of {name}"
            )
