"""Fetch v11: the request, and its answer parsed over the response's one buffer, each
partition's record batches a slice of it (no copy).

Without a session (session 0, epoch -1) a request is a full fetch, which the broker
forgets at once; :mod:`srm_driver.copier.wire.fetch_session` keeps an incremental one
(KIP-227) and says what to name and forget. ``read_committed`` by default, so a
partition's records end at its last stable offset and the aborted transactions inside
them are listed with the records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from srm_driver.copier.wire.errors import BrokerError
from srm_driver.copier.wire.messages import READ_COMMITTED
from srm_driver.copier.wire.primitives import Reader, Writer

EMPTY = memoryview(b"")


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    topic: str
    partition: int
    error: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: tuple[tuple[int, int], ...]  # (producer id, first offset) of aborted transactions
    records: memoryview  # whole batches, and maybe a partial one at the end


def fetch_request(
    wanted: Mapping[str, Sequence[tuple[int, int]]],
    *,
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int,
    partition_max_bytes: int,
    isolation: int = READ_COMMITTED,
    session: tuple[int, int] = (0, -1),
    forgotten: Mapping[str, Sequence[int]] | None = None,
) -> bytes:
    """Fetch ``wanted[topic] = [(partition, offset), ...]`` in ``session`` (id, epoch;
    none by default), no longer reading ``forgotten[topic] = [partition, ...]``."""
    writer = Writer().int32(-1).int32(max_wait_ms).int32(min_bytes).int32(max_bytes)
    writer.int8(isolation).int32(session[0]).int32(session[1]).array(len(wanted))
    for topic, partitions in wanted.items():
        writer.string(topic).array(len(partitions))
        for partition, offset in partitions:
            writer.int32(partition).int32(-1).int64(offset).int64(-1).int32(partition_max_bytes)
    forgotten = forgotten or {}
    writer.array(len(forgotten))
    for topic, numbers in forgotten.items():
        writer.string(topic).array(len(numbers))
        for partition in numbers:
            writer.int32(partition)
    return bytes(writer.string("").buffer)  # no rack


def session_of(view: memoryview) -> int:
    """The fetch session id of a Fetch answer (0: none)."""
    return int.from_bytes(view[6:10], "big", signed=True)


def fetch_response(view: memoryview) -> tuple[int, list[FetchedPartition]]:
    """(the answer's own error code, every partition's answer in order)."""
    reader = Reader(view)
    reader.int32()  # throttle time
    error = reader.int16()
    reader.int32()  # session id
    found = []
    for _ in range(reader.array()):
        topic = reader.string()
        for _ in range(reader.array()):
            partition, p_error = reader.int32(), reader.int16()
            high, stable, start = reader.int64(), reader.int64(), reader.int64()
            aborted = tuple((reader.int64(), reader.int64()) for _ in range(reader.array()))
            reader.int32()  # preferred read replica
            records = reader.nullable_bytes()
            records = EMPTY if records is None else records
            answer = FetchedPartition(
                topic, partition, p_error, high, stable, start, aborted, records
            )
            found.append(answer)
    return error, found


def raise_refusal(broker: str, error: int, answers: Sequence[FetchedPartition]) -> None:
    """Raise a Fetch answer's own error, else its first partition's."""
    if error:
        raise BrokerError(broker, "Fetch", error)
    for answer in answers:
        if answer.error:
            raise BrokerError(
                broker, "Fetch", answer.error, f"of {answer.topic}-{answer.partition}"
            )
