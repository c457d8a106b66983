"""Record batches a batch copy cannot pass through as they are, rebuilt into batches it
can: decoded and encoded again (aiokafka's v2 record codec, the source batch's own
compression codec), never more than one fetched batch at a time.

Three kinds of source batch are rebuilt (:data:`srm_driver.copier.batch_rules.REBUILD`):

* one the partition's position lies inside (a plan that starts where a record copy, an
  operator's resume or a batch copy turned on at run time left it): its records from the
  position on;
* one whose offsets have gaps (a compacted topic): one batch per run of contiguous
  offsets, so each maps one to one onto the target's offsets and the gaps between runs
  are upstream gaps, as between any two batches (offset syncs on both sides);
* one whose records carry the source broker's ``LogAppendTime``: ``CreateTime`` with that
  time as every record's timestamp (what the record copy writes for them).

Keys, values, headers and timestamps are the source records'; the new batches are
plain (no producer, not transactional: the copy re-stamps them for its own producer).
A batch is decoded only if its CRC-32C holds (else the copy would seal damage). ::

    source batch   offsets 10 11 12 _ _ 15 16 _ 18      (position 11)
    rebuilt        [11 12]  [15 16]  [18]
"""

from __future__ import annotations

from collections.abc import Iterator

from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from srm_driver.copier.batch_rules import LOG_APPEND_TIME, RECORD_BY_RECORD, Batch

_CODEC = 0x07
# Big enough that the builder never turns a record away (a rebuilt batch holds at most
# the records of one source batch, which the source broker took whole).
_NO_LIMIT = (1 << 31) - 1


def rebuild(batch: Batch, next_send: int) -> list[Batch] | str:
    """The records of ``batch`` at or after ``next_send``, as batches that pass through
    (see the module docstring): [] when none is left; a sentence saying why when it
    cannot be decoded (a codec this process lacks, a header key that is not UTF-8)."""
    where = f"the source batch of offsets {batch.first}..{batch.last}"
    try:
        return _rebuilt(batch, next_send)
    except Exception as exc:  # noqa: BLE001 - whatever aiokafka's codec says: refused
        return (
            f"{where} cannot be decoded to be copied from offset {next_send} ({exc});"
            f" {RECORD_BY_RECORD}"
        )


def _rebuilt(batch: Batch, next_send: int) -> list[Batch]:
    codec = batch.attributes & _CODEC
    records = [r for r in DefaultRecordBatch(bytes(batch.view)) if r.offset >= next_send]
    log_append_time = bool(batch.attributes & LOG_APPEND_TIME)
    rebuilt: list[Batch] = []
    for run in _runs(records):
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=_NO_LIMIT,
        )  # fmt: skip
        first = run[0].offset
        for record in run:
            timestamp = batch.max_timestamp if log_append_time else record.timestamp
            builder.append(
                record.offset - first, timestamp=timestamp, key=record.key,
                value=record.value, headers=record.headers,
            )  # fmt: skip
        raw = builder.build()
        raw[0:8] = first.to_bytes(8, "big", signed=True)  # the base offset (the CRC skips it)
        rebuilt.append(Batch.read(memoryview(raw)))
    return rebuilt


def _runs(records: list) -> Iterator[list]:  # type: ignore[type-arg]
    """``records`` (in offset order) cut where their offsets have a gap."""
    run: list = []  # type: ignore[type-arg]
    for record in records:
        if run and record.offset != run[-1].offset + 1:
            yield run
            run = []
        run.append(record)
    if run:
        yield run
