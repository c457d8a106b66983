"""Produce v8: a request written as its small framing parts between the batches' own
buffers (nothing joined: the connection hands the list to one ``sendmsg``), and its answer.

Kafka takes at most one v2 batch per partition in a Produce request, so a request carries
``{topic: [(partition, parts of one batch), ...]}``, where the parts are the buffers of
one batch in order (a re-stamped header and the records it leaves in place, see
:func:`~srm_driver.copier.wire.batches.restamp`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from srm_driver.copier.wire.errors import BrokerError
from srm_driver.copier.wire.primitives import Reader, Writer

Buffer = bytes | bytearray | memoryview  # of bytes (format "B"): len() is its size
ACKS_ALL = -1


@dataclass(frozen=True, slots=True)
class Produced:
    topic: str
    partition: int
    error: int
    base_offset: int  # the batch's first offset on the target
    log_append_time: int  # -1 unless the topic stamps LogAppendTime
    log_start_offset: int
    record_errors: tuple[tuple[int, str | None], ...]  # (record index in the batch, message)
    message: str | None


def produce_request(
    batches: Mapping[str, Sequence[tuple[int, Sequence[Buffer]]]],
    *,
    timeout_ms: int,
    acks: int = ACKS_ALL,
) -> list[Buffer]:
    """The request's body as a list of buffers, the batches' own among them."""
    parts: list[Buffer] = []
    writer = Writer().nullable_string(None).int16(acks).int32(timeout_ms).array(len(batches))
    for topic, partitions in batches.items():
        writer.string(topic).array(len(partitions))
        for partition, batch in partitions:
            writer.int32(partition).int32(sum(map(len, batch)))
            parts.append(writer.buffer)
            parts.extend(batch)
            writer = Writer()
    if writer.buffer:
        parts.append(writer.buffer)
    return parts


def produce_response(view: memoryview) -> list[Produced]:
    reader = Reader(view)
    found = []
    for _ in range(reader.array()):
        topic = reader.string()
        for _ in range(reader.array()):
            partition, error, base = reader.int32(), reader.int16(), reader.int64()
            append_time, start = reader.int64(), reader.int64()
            record_errors = tuple(
                (reader.int32(), reader.nullable_string()) for _ in range(reader.array())
            )
            message = reader.nullable_string()
            found.append(
                Produced(topic, partition, error, base, append_time, start, record_errors, message)
            )
    reader.int32()  # throttle time
    return found


def raise_refusal(broker: str, answers: Sequence[Produced]) -> None:
    """Raise the first partition's error in a Produce answer, with the broker's own words."""
    for answer in answers:
        if answer.error:
            said = [answer.message] if answer.message else []
            said += [f"record {index}: {text}" for index, text in answer.record_errors]
            where = f"to {answer.topic}-{answer.partition}"
            raise BrokerError(broker, "Produce", answer.error, where, "; ".join(said) or None)
