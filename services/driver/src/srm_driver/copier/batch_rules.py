"""Which fetched record batches a batch copy passes through, and what it does with each:
pure decisions over the batch headers (nothing here decodes a record or does I/O).

A fetched partition's bytes hold whole batches (and maybe a cut-off one at the end).
:func:`data_batches` keeps what a ``read_committed`` consumer would hand over, batch by
batch, as Kafka's own consumer decides it: control batches (transaction markers) are
left out, and so is every batch of a transaction the fetch answer lists as aborted,
from its first offset until that producer's next marker::

    offsets   0..4 data   5..6 data (tx, pid 7)   7 marker (pid 7)   8..9 data
    aborted   [(pid 7, first offset 5)]
    kept      0..4                                                   8..9

(``read_uncommitted`` keeps every data batch, as that consumer would.) The records left
out are upstream gaps, as they are for the record-by-record copy.

:func:`step` then decides one batch against its partition's position and reservation.
A batch passes through only whole and unchanged, so it must be one the target broker
keeps as it is and whose offsets map one to one; a batch that is not is *rebuilt*
(:data:`REBUILD`, :mod:`~srm_driver.copier.batch_rebuild`: decoded and encoded again
with its codec) into batches that are:

* it starts at the next offset to send (a batch wholly before it was already copied:
  skipped; one that starts before it and ends after it is rebuilt from that offset);
* its offsets are contiguous (``record count == last offset delta + 1``): a compacted
  source's batch with holes would be renumbered by the target broker, so it is rebuilt
  as one batch per run of contiguous offsets;
* its timestamps are the producers' (``CreateTime``): a ``LogAppendTime`` batch's records
  carry the source broker's append time, which the record copy writes as each record's
  timestamp, and so does its rebuilt batch;
* it carries no delete horizon (the source's cleaner's, :data:`DELETE_HORIZON`): the
  rebuilt batch has none, so the target's cleaner keeps its tombstones for the target's
  own ``delete.retention.ms``, as for a record copy;
* its CRC-32C holds (re-stamping or rebuilding seals the bytes with a new checksum, so a
  batch damaged on its way would pass the target broker's check): refused, never
  rebuilt;
* it spans at most the whole reservation window (``srm.batch.max.records``): a wider one
  could never end below a reservation, so it is rebuilt as batches of at most that many
  offsets;
* it ends below the partition's reservation (else it waits for the reservation to move).

A message of the old formats (magic 0 or 1) is refused whole, and nothing after it in the
fetch is read: its bytes are not a v2 header.

Each refusal is a sentence that names the batch, why, and how to copy it (the partition
halts with it after ``srm.poison.max.tries``, docs/driver.md).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from srm_driver.copier.wire.batches import CONTROL, HEADER, TRANSACTIONAL, checksum_holds

LOG_APPEND_TIME = 0x08
# Set by a log cleaner (Kafka 3.1+, KIP-534) on a batch whose tombstones it keeps until a
# time it wrote in the batch's base timestamp: a horizon of the source's log, not the
# target's (whose own cleaner keeps tombstones for its own delete.retention.ms).
DELETE_HORIZON = 0x40
# Where every format's magic byte lies: after the offset (8), the size (4) and the v2
# batch's partition leader epoch or the old message's CRC (4).
_MAGIC_AT = 16
SKIP = "skip"
SEND = "send"
WAIT = "wait"
REBUILD = "rebuild"
# How to copy what a batch copy cannot (said in every refusal).
RECORD_BY_RECORD = (
    "set srm.copy.batches = false for this flow to copy it record by record, then resume"
    " the partition (srm-control partitions --resume ... --from copy-end)"
)


@dataclass(frozen=True, slots=True)
class Batch:
    """One whole record batch of a fetch answer (``view`` a slice of it) and its header."""

    view: memoryview
    first: int
    last: int
    count: int
    magic: int
    attributes: int
    max_timestamp: int
    producer_id: int

    @classmethod
    def read(cls, view: memoryview) -> Batch:
        (base, _, _, magic, _, attributes, last_delta, _, max_ts, pid, _, _, count) = (
            HEADER.unpack_from(view)
        )
        return cls(view, base, base + last_delta, count, magic, attributes, max_ts, pid)


def data_batches(
    records: memoryview, aborted: Iterable[tuple[int, int]], *, read_committed: bool = True
) -> tuple[list[Batch], int]:
    """The data batches a consumer would see in a fetched partition's ``records`` (see
    the module docstring), and the offset after the last whole batch of any kind (-1:
    none). ``aborted`` is the fetch answer's (producer id, first offset) list."""
    found: list[Batch] = []
    pending = deque(sorted(aborted, key=lambda item: item[1]))
    aborting: set[int] = set()
    position, size, next_offset = 0, len(records), -1
    while position + _MAGIC_AT + 1 <= size:
        length = int.from_bytes(records[position + 8 : position + 12], "big", signed=True)
        end = position + 12 + length
        magic = records[position + _MAGIC_AT]
        if magic != 2 or length < HEADER.size - 12:
            # A message of the old formats (magic 0/1: its bytes past the magic are not a
            # v2 header) or a v2 header too short to be one: nothing after it is read,
            # and step refuses it whole (an offset read as a timestamp would move the
            # position anywhere, records silently skipped).
            offset = int.from_bytes(records[position : position + 8], "big", signed=True)
            found.append(Batch(records[position:position], offset, offset, 0, magic, 0, -1, -1))
            break
        if end > size:
            break  # cut off by the fetch's size: fetched again from its start
        batch = Batch.read(records[position:end])
        position = end
        next_offset = batch.last + 1
        control = batch.attributes & CONTROL
        if read_committed and batch.producer_id >= 0:
            while pending and pending[0][1] <= batch.last:
                aborting.add(pending.popleft()[0])
            if control:
                aborting.discard(batch.producer_id)  # its marker ends the aborted transaction
            elif batch.attributes & TRANSACTIONAL and batch.producer_id in aborting:
                continue
        if not control:
            found.append(batch)
    return found, next_offset


def step(batch: Batch, next_send: int, reserve: int, window: int) -> str:
    """What to do with ``batch`` for a partition whose next offset to send is
    ``next_send`` and whose reservation ends at ``reserve`` (the whole window being
    ``window`` offsets): :data:`SKIP`, :data:`SEND`, :data:`WAIT` (for the reservation to
    move), :data:`REBUILD`, or a refusal (a sentence, see the module docstring)."""
    where = f"the source batch of offsets {batch.first}..{batch.last}"
    if batch.magic != 2:
        where = f"the source message at offset {batch.first}"
        return f"{where} has the old format (magic {batch.magic}); {RECORD_BY_RECORD}"
    if batch.last < next_send:
        return SKIP
    if not checksum_holds(batch.view):
        return (
            f"{where} fails its CRC-32C check (damaged on its way or on the source); a batch"
            " copy would seal the damage with a new checksum. The partition is planned again"
            " and the batch fetched again; if it halts, the source's log is damaged: repair"
            " it, or skip the batch, whose records are then not copied (srm-control"
            f" partitions --resume ... --from offset --offset {batch.last + 1})"
        )
    span = batch.last - batch.first + 1
    if (
        batch.first < next_send
        or batch.count != span
        or span > window
        or batch.attributes & (LOG_APPEND_TIME | DELETE_HORIZON)
    ):
        return REBUILD
    if batch.last >= reserve:
        return WAIT
    return SEND
