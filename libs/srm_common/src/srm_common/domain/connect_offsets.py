"""MM2 connectors' Connect source offsets in ``mm2-offsets.<S>.internal``, byte for byte."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final, TypeVar, cast

from srm_common.errors import RecordFormatError

# Connector names in MM2's dedicated mode (the connector class's simple name). Under a
# Connect cluster the operator names the connectors, hence the ``connector`` arguments.
SOURCE_CONNECTOR: Final = "MirrorSourceConnector"
CHECKPOINT_CONNECTOR: Final = "MirrorCheckpointConnector"
HEARTBEAT_CONNECTOR: Final = "MirrorHeartbeatConnector"

_T = TypeVar("_T", str, int)

_INT32_RANGE: Final = (-(2**31), 2**31 - 1)
_INT64_RANGE: Final = (-(2**63), 2**63 - 1)

# Connect's JsonConverter writes with Jackson, which escapes only '"', '\', the C0
# controls (\b \t \n \f \r short, others \u00XX in UPPER-case hex) and every UTF-16
# surrogate unit, so a character beyond U+FFFF becomes an escaped surrogate pair rather
# than 4 raw UTF-8 bytes. All else, non-ASCII included, is raw UTF-8. Python's json
# module differs (lower-case hex, astral characters raw), and Connect finds offsets by
# comparing key bytes, so the strings are written here.
_JSON_ESCAPE: Final = re.compile(r'[\x00-\x1f"\\\ud800-\udfff\U00010000-\U0010ffff]')
_SHORT_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


@dataclass(frozen=True, slots=True)
class SourceOffset:
    """Where MirrorSourceConnector stands on one upstream partition of ``cluster``.

    ``offset`` is the upstream offset of the last record copied; a restarted task seeks
    to ``offset + 1``. ``None`` means the stored offset was deleted (a null value, e.g. an
    offsets reset): the task then starts from ``auto.offset.reset`` (earliest).
    """

    cluster: str
    topic: str
    partition: int
    offset: int | None


def source_offset_key(
    cluster_alias: str, topic: str, partition: int, *, connector: str = SOURCE_CONNECTOR
) -> bytes:
    """Key of MirrorSourceConnector's offset for an upstream partition.

    ``source_offset_key("A", "t", 0)`` -> ``["MirrorSourceConnector",{"cluster":"A",
    "partition":0,"topic":"t"}]`` (compact, one line). Field order is the iteration order
    of the ``java.util.HashMap`` MM2 builds: by bucket of each key name's hash in a
    16-bucket table (cluster 1, partition 3, topic 9; group 15; sourceClusterAlias 10,
    targetClusterAlias 15), so it is fixed whatever the insertion order.
    """
    _require_int("partition", partition, _INT32_RANGE)
    return _connect_key(
        connector, (("cluster", cluster_alias), ("partition", partition), ("topic", topic))
    )


def source_offset_value(offset: int) -> bytes:
    """Value ``{"offset":N}``; MirrorCheckpointConnector and MirrorHeartbeatConnector
    records always carry ``source_offset_value(0)`` (written, never read back)."""
    _require_int("offset", offset, _INT64_RANGE)
    return b'{"offset":%d}' % offset


def checkpoint_offset_key(
    consumer_group_id: str, topic: str, partition: int, *, connector: str = CHECKPOINT_CONNECTOR
) -> bytes:
    """Key of a checkpoint record's source offset; ``topic`` is the downstream name.

    The order (partition, topic, group) is HashMap bucket order, as for the source key.

    ``checkpoint_offset_key("g", "A.t", 0)`` ->
    ``["MirrorCheckpointConnector",{"partition":0,"topic":"A.t","group":"g"}]``.
    """
    _require_int("partition", partition, _INT32_RANGE)
    return _connect_key(
        connector, (("partition", partition), ("topic", topic), ("group", consumer_group_id))
    )


def heartbeat_offset_key(
    source_cluster_alias: str, target_cluster_alias: str, *, connector: str = HEARTBEAT_CONNECTOR
) -> bytes:
    """Key of a heartbeat record's source offset.

    ``heartbeat_offset_key("A", "B")`` ->
    ``["MirrorHeartbeatConnector",{"sourceClusterAlias":"A","targetClusterAlias":"B"}]``.
    """
    return _connect_key(
        connector,
        (
            ("sourceClusterAlias", source_cluster_alias),
            ("targetClusterAlias", target_cluster_alias),
        ),
    )


def decode_source_offset(
    key: bytes, value: bytes | None, *, connector: str = SOURCE_CONNECTOR
) -> SourceOffset | None:
    """Read one record of ``mm2-offsets.<S>.internal`` as a MirrorSourceConnector offset.

    Returns ``None`` for keys of any other connector (checkpoint, heartbeat, ...). Any
    JSON spelling of the key is accepted, though Connect itself only matches the exact
    bytes ``source_offset_key`` writes. Raises ``RecordFormatError`` when the key or
    value is not JSON of Connect's ``[name, {partition}]`` / ``{"offset": N}`` shape.
    """
    parsed = _load_json("key", key)
    if not isinstance(parsed, list):
        raise RecordFormatError(f"offsets key {key!r} is not a JSON array [connector, partition]")
    items = cast(list[object], parsed)
    if len(items) != 2 or not isinstance(items[0], str) or not isinstance(items[1], dict):
        raise RecordFormatError(f"offsets key {key!r} is not [connector name, partition object]")
    if items[0] != connector:
        return None
    fields = cast(dict[str, object], items[1])
    cluster = _field(key, fields, "cluster", str)
    topic = _field(key, fields, "topic", str)
    partition = _field(key, fields, "partition", int)
    _require_int("partition", partition, _INT32_RANGE)
    if value is None:
        return SourceOffset(cluster, topic, partition, None)
    body = _load_json("value", value)
    if not isinstance(body, dict):
        raise RecordFormatError(f'offsets value {value!r} is not a JSON object {{"offset": N}}')
    offset = _field(value, cast(dict[str, object], body), "offset", int)
    _require_int("offset", offset, _INT64_RANGE)
    return SourceOffset(cluster, topic, partition, offset)


def _load_json(part: str, data: bytes) -> object:
    try:
        parsed: object = json.loads(data)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise RecordFormatError(f"offsets {part} {data!r} is not UTF-8 JSON: {exc}") from exc
    return parsed


def _field(data: bytes, fields: dict[str, object], name: str, kind: type[_T]) -> _T:
    found = fields.get(name)
    # bool is an int in Python but a distinct JSON type that Java would refuse here.
    if not isinstance(found, kind) or isinstance(found, bool):
        raise RecordFormatError(
            f"offsets record {data!r}: field '{name}' must be a JSON {kind.__name__}, got {found!r}"
        )
    return found


def _require_int(field: str, value: int, bounds: tuple[int, int]) -> None:
    if not bounds[0] <= value <= bounds[1]:
        raise RecordFormatError(f"{field} {value} is outside Java's range {bounds}")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 | (code >> 10):04X}\\u{0xDC00 | (code & 0x3FF):04X}"
    return f"\\u{code:04X}"


def _json_string(value: str) -> str:
    return '"' + _JSON_ESCAPE.sub(_escape, value) + '"'


def _connect_key(connector: str, fields: tuple[tuple[str, str | int], ...]) -> bytes:
    members = ",".join(
        f"{_json_string(name)}:{item if isinstance(item, int) else _json_string(item)}"
        for name, item in fields
    )
    # Every surrogate was escaped above, so encoding cannot fail.
    return f"[{_json_string(connector)},{{{members}}}]".encode()
