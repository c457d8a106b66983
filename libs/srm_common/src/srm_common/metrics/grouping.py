"""Partition samples of one interval as :class:`PartitionsSample` records (version 2 of
the raw metrics): a few records per flow and interval, whatever the partition count.
Pure.

Members go where their own version 1 record went (:func:`raw_partition`), so one
partition's samples stay on one raw partition, and in one aggregator's window cells,
across the upgrade; a group's record stays under :data:`GROUP_BYTES`.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Final

from srm_common.metrics.raw import MAX_REASON, PartitionSample, PartitionsSample, member_fields

GROUP_BYTES: Final = 128 * 1024
"""The most a :class:`PartitionsSample` record holds (Kafka's default limit is 1 MiB)."""


def raw_partition(key: bytes, partitions: int) -> int:
    """Where a record with ``key`` goes among ``partitions`` under librdkafka's default
    partitioner (CRC-32 of the key): a group goes where each of its members' version 1
    record went, so a partition's samples stay on one raw partition across versions."""
    return zlib.crc32(key) % partitions


def grouped(
    samples: Sequence[PartitionSample], partitions: int, *, max_bytes: int = GROUP_BYTES
) -> list[tuple[int, PartitionsSample]]:
    """``samples`` (each with its own unique id) as groups, each with the raw partition
    it goes to: members of one group share flow, interval and raw partition (that of
    their own key), and a group's record stays within ``max_bytes`` (a member alone is a
    group of its own). A group takes its first member's id, used by no other group."""
    by_place: dict[tuple[str, int, int, int], list[PartitionSample]] = {}
    for sample in sorted(samples, key=lambda s: (s.flow, s.topic, s.partition)):
        place = (
            sample.flow,
            sample.at_ms,
            sample.interval_ms,
            raw_partition(sample.key(), partitions),
        )
        by_place.setdefault(place, []).append(sample)
    out: list[tuple[int, PartitionsSample]] = []
    for (_flow, _at, _interval, partition), members in by_place.items():
        chunk: list[PartitionSample] = []
        size = _ENVELOPE_BYTES
        for member in members:
            grows = _cost(member, opens_topic=not chunk or chunk[-1].topic != member.topic)
            again = bool(chunk) and member.subject() == chunk[-1].subject()  # (never from a driver)
            if chunk and (size + grows > max_bytes or again):
                out.append((partition, _group(chunk)))
                chunk, size = [], _ENVELOPE_BYTES
                grows = _cost(member, opens_topic=True)
            chunk.append(member)
            size += grows
        if chunk:
            out.append((partition, _group(chunk)))
    return out


_ENVELOPE_BYTES: Final = 300  # a group's own fields: version, kind, id, times, flow


def _cost(member: PartitionSample, *, opens_topic: bool) -> int:
    """The bytes ``member`` adds to a group's record (at most: with its topic's)."""
    cost = _member_bytes(member) + 1
    if opens_topic:
        cost += _text_bytes(member.topic) + _text_bytes(member.remote_topic) + 3 + 48
    return cost


def _text_bytes(text: str) -> int:
    """The length of ``text`` as a JSON string (a Kafka topic name needs no escapes)."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return len(text) + 2
    return len(_json(text))


def _member_bytes(member: PartitionSample) -> int:
    """The length of ``member``'s entry as :func:`member_fields` JSON, worked out without
    writing it for the numbers and nulls that make up an idle partition's entry (JSON
    writes an int, a bool or None in as many characters as ``str``): 10,000 partitions
    are grouped every interval, and a ``json.dumps`` each was most of it."""
    data = member_fields(member)
    size = len(data) + 1  # the braces and the commas between entries
    for key, value in data.items():
        size += len(key) + 3  # the quoted key and its colon
        if value is None or isinstance(value, int):
            size += len(str(value))
        elif isinstance(value, str):
            size += _text_bytes(value)
        else:
            size += len(_json(value))
    return size


def _group(members: list[PartitionSample]) -> PartitionsSample:
    first = members[0]
    common = {"id": first.id, "at_ms": first.at_ms, "interval_ms": first.interval_ms}
    return PartitionsSample(
        **common, flow=first.flow, partitions=tuple(_member(m, common) for m in members)
    )


def _member(sample: PartitionSample, common: dict[str, object]) -> PartitionSample:
    """``sample`` as a member of its group, as decoding the group gives it back (the
    group's id and times, its reason cut): ``dataclasses.replace`` without running the
    constructor, which was most of grouping 10,000 partitions every interval."""
    member = object.__new__(PartitionSample)
    member.__dict__.update(sample.__dict__, **common, halt_reason=_cut(sample.halt_reason))
    return member


def _cut(reason: str | None) -> str | None:
    return reason[:MAX_REASON] if reason is not None else None


def _json(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
