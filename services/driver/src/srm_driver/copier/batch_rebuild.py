"""Record batches a batch copy cannot pass through as they are, rebuilt into batches it
can: decoded and encoded again (aiokafka's v2 record codec, the source batch's own
compression codec), never more than one fetched batch at a time.

Five kinds of source batch are rebuilt (:data:`srm_driver.copier.batch_rules.REBUILD`):

* one the partition's position lies inside (a plan that starts where a record copy, an
  operator's resume or a batch copy turned on at run time left it): its records from the
  position on;
* one whose offsets have gaps (a compacted topic): one batch per run of contiguous
  offsets, so each maps one to one onto the target's offsets and the gaps between runs
  are upstream gaps, as between any two batches (offset syncs on both sides);
* one whose records carry the source broker's ``LogAppendTime``: ``CreateTime`` with that
  time as every record's timestamp (what the record copy writes for them);
* one that spans more offsets than the reservation window (``srm.batch.max.records``),
  which could never end below a reservation: batches of at most ``window`` records;
* one holding a record the target refused (too large, an invalid record or timestamp):
  one batch per record, so the records before it are copied and only the refused one
  stops its partition, as in the record copy (:func:`decide`'s ``alone``).

Keys, values, headers and timestamps are the source records'; the new batches are
plain (no producer, not transactional: the copy re-stamps them for its own producer).
A rebuilt batch is never larger than its source batch (a run that would be is split), so
a target that took the source's batches takes it. A batch is decoded only if its CRC-32C
holds (else the copy would seal damage); one whose records cannot be decoded (a header
key that is not UTF-8, which aiokafka refuses) is refused with the way out. ::

    source batch   offsets 10 11 12 _ _ 15 16 _ 18      (position 11)
    rebuilt        [11 12]  [15 16]  [18]
"""

from __future__ import annotations

from collections.abc import Iterator

from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from srm_driver.copier.batch_rules import (
    LOG_APPEND_TIME,
    REBUILD,
    RECORD_BY_RECORD,
    SEND,
    WAIT,
    Batch,
    step,
)
from srm_driver.copier.failures import too_large

_CODEC = 0x07
# Big enough that the builder never turns a record away (a rebuilt batch holds at most
# the records of one source batch, which the source broker took whole).
_NO_LIMIT = (1 << 31) - 1


def decide(
    batch: Batch, next_send: int, reserve: int, window: int, alone: int | None = None
) -> str | list[Batch]:
    """:func:`~srm_driver.copier.batch_rules.step`'s decision for ``batch``, or, where it
    says :data:`~srm_driver.copier.batch_rules.REBUILD`, the rebuilt batches to decide on
    instead (a sentence when it cannot be rebuilt). ``alone``: an upstream offset in a
    batch the target refused; a batch of several records holding it is rebuilt as one
    batch per record."""
    decision = step(batch, next_send, reserve, window)
    if (
        alone is not None
        and batch.count > 1
        and batch.first <= alone <= batch.last
        and decision in (SEND, WAIT, REBUILD)
    ):
        return rebuild(batch, next_send, most=1)
    return rebuild(batch, next_send, most=window) if decision == REBUILD else decision


class Refused:
    """Per partition, the first upstream offset of a batch the target refused as poison
    (the ``alone`` of :func:`decide`), forgotten once the partition is sent past it (the
    target took it after all). A unit's own memory: it outlives the unit's breaks."""

    def __init__(self) -> None:
        self._at: dict[tuple[str, int], int] = {}

    def add(self, key: tuple[str, int], offset: int) -> None:
        self._at[key] = offset

    def at(self, key: tuple[str, int], next_send: int) -> int | None:
        offset = self._at.get(key)
        if offset is not None and next_send > offset:
            del self._at[key]
            return None
        return offset


def refused_size(batch: Batch) -> str:
    """Words for a batch the target refused as too large: its records and bytes, or
    the size of its one record's value (as the record copy says it)."""
    lower = "the remote topic's max.message.bytes is lower"
    if batch.count != 1:
        return (
            f" (the target refused a batch of {batch.count:,} records, {len(batch.view):,}"
            f" bytes: {lower}; they are sent again one batch each)"
        )
    try:
        (record,) = DefaultRecordBatch(bytes(batch.view))
    except Exception:  # noqa: BLE001 - a batch the target refused: said without its value
        return f" (the target refused a batch of one record, {len(batch.view):,} bytes: {lower})"
    return too_large(len(record.value or b""))


def rebuild(
    batch: Batch, next_send: int, limit: int | None = None, most: int | None = None
) -> list[Batch] | str:
    """The records of ``batch`` at or after ``next_send``, as batches that pass through
    (see the module docstring): [] when none is left; a sentence saying why when it
    cannot be decoded (a codec this process lacks, a header key that is not UTF-8).
    ``limit``: the most bytes a rebuilt batch of more than one record may take (default:
    the source batch's); ``most``: the most records one may hold (default: no limit)."""
    where = f"the source batch of offsets {batch.first}..{batch.last}"
    size = len(batch.view) if limit is None else limit
    try:
        return _rebuilt(batch, next_send, size, most or batch.count)
    except Exception as exc:  # noqa: BLE001 - aiokafka's codecs raise many kinds: refused
        return (
            f"{where} cannot be decoded to be copied from offset {next_send} ({exc});"
            f" {RECORD_BY_RECORD}"
        )


def _rebuilt(batch: Batch, next_send: int, limit: int, most: int) -> list[Batch]:
    records = [r for r in DefaultRecordBatch(bytes(batch.view)) if r.offset >= next_send]
    rebuilt: list[Batch] = []
    for run in _runs(records, max(1, most)):
        rebuilt.extend(_encoded(batch, run, limit))
    return rebuilt


def _encoded(batch: Batch, run: list, limit: int) -> list[Batch]:  # type: ignore[type-arg]
    """``run`` (contiguous offsets) as one batch with ``batch``'s codec; as two halves,
    each encoded again, when that one comes out larger than ``limit`` (the source batch's
    size: another compression level than the source producer's may make it so; the target
    took the source batch, so it takes batches no larger)."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=batch.attributes & _CODEC, is_transactional=0,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=_NO_LIMIT,
    )  # fmt: skip
    first = run[0].offset
    log_append_time = bool(batch.attributes & LOG_APPEND_TIME)
    for record in run:
        timestamp = batch.max_timestamp if log_append_time else record.timestamp
        appended = builder.append(
            record.offset - first, timestamp=timestamp, key=record.key,
            value=record.value, headers=record.headers,
        )  # fmt: skip
        if appended is None:
            raise ValueError(f"record {record.offset} does not fit in one batch")
    raw = builder.build()
    if len(raw) > limit and len(run) > 1:
        half = len(run) // 2
        return _encoded(batch, run[:half], limit) + _encoded(batch, run[half:], limit)
    raw[0:8] = first.to_bytes(8, "big", signed=True)  # the base offset (the CRC skips it)
    return [Batch.read(memoryview(raw))]


def _runs(records: list, most: int) -> Iterator[list]:  # type: ignore[type-arg]
    """``records`` (in offset order) cut where their offsets have a gap, after ``most``
    records, and before a record with a timestamp that follows one without (-1): a
    batch's first timestamp is its records' base, and the builder takes -1 there for
    none, so a run starting with -1 holds only -1s (each run's timestamps then come out
    as they went in)."""
    run: list = []  # type: ignore[type-arg]
    for record in records:
        if run and (
            record.offset != run[-1].offset + 1
            or len(run) >= most
            or (run[0].timestamp == -1 and record.timestamp != -1)
        ):
            yield run
            run = []
        run.append(record)
    if run:
        yield run
