"""A prototype of the copy no re-producing replicator makes: record batches passed through.

``python -m srm_bench.batch_loop`` copies the data set from the source to
``primary.bench-data`` on the target without ever decoding a record: it fetches record
batches (Kafka's Fetch API, ``read_committed``), and sends each one on as it came, in
Produce requests of an idempotent producer of its own (InitProducerId, ``acks=all``),
with only the batch header re-stamped: base offset 0, no partition leader epoch, the
producer id, epoch and base sequence of this producer, the transactional bit cleared, and
the CRC-32C recomputed over the bytes it covers (``../shared/reference/scale-and-wan.md``).
Keys, values, headers, timestamps and the codec of every record stay the bytes the source
holds: a compressed batch is never decompressed.

It runs the same way :mod:`srm_bench.raw_loop` does (until SIGTERM, measured as a
replicator: copy rate, steady CPU per GiB, peak RSS) so that ``make bench --batch-copy``
can say what passing batches through would buy over the copy slot's client library. It is
a measurement, not the copy slot: no leases, no fencing by the driver, no offset syncs;
it refuses (exits non-zero) where a byte copy would be wrong instead of guessing: a
batch of magic below 2, aborted transactions in a fetch, or a target that answers a
Produce with an error.

The protocol layer is aiokafka's (requests built and version-negotiated by it, one
connection per broker); CRC-32C is the ``crc32c`` package's (hardware, about 8 GB/s here) when
installed, else aiokafka's own (about 0.35 GB/s).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import struct
import sys
from collections.abc import Sequence

try:  # the hardware CRC when present; the prototype must not be bound by a slow one
    from crc32c import crc32c
except ImportError:  # pragma: no cover - depends on the environment
    from aiokafka.record._crecords.cutil import crc32c_cython as crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")  # record batch v2 header, 61 bytes
CRC_FROM = 21  # attributes onwards
TRANSACTIONAL = 0x10
CONTROL = 0x20
FETCH_PARTITION_BYTES = 4 << 20
FETCH_BYTES = 64 << 20
PRODUCES_IN_FLIGHT = 5  # what an idempotent producer may have in flight per partition
# InitProducerId errors worth waiting out: coordinator loading, not available; concurrent
# transactions.
RETRIABLE_INIT = frozenset({14, 15, 51})


class CopyRefused(RuntimeError):
    """A batch or an answer this prototype will not copy past (see the module docstring)."""


def restamp(out: bytearray, batch: memoryview, producer_id: int, epoch: int, sequence: int) -> int:
    """Append ``batch`` to ``out`` re-stamped for this producer; returns the sequence
    after it."""
    start = len(out)
    out += batch
    (_, length, _, magic, _, attributes, last_delta, base_ts, max_ts, _, _, _, count) = (
        HEADER.unpack_from(out, start)
    )
    if magic != 2:
        raise CopyRefused(f"a record batch of magic {magic}: only v2 batches are passed through")
    HEADER.pack_into(
        out, start, 0, length, -1, 2, 0, attributes & ~TRANSACTIONAL, last_delta,
        base_ts, max_ts, producer_id, epoch, sequence, count,
    )  # fmt: skip
    with (
        memoryview(out) as view,
        view.toreadonly() as frozen,
        frozen[start + CRC_FROM :] as covered,
    ):
        checksum = crc32c(covered)
    struct.pack_into(">I", out, start + 17, checksum)
    return (sequence + last_delta + 1) & 0x7FFFFFFF


def split(records: bytes) -> tuple[list[memoryview], int]:
    """Whole batches in a fetched partition's bytes (a trailing partial one is dropped),
    control batches left out, and the offset after the last whole batch (-1: none)."""
    view = memoryview(records)
    batches: list[memoryview] = []
    position, next_offset = 0, -1
    while position + HEADER.size <= len(view):
        base, length = struct.unpack_from(">qi", view, position)
        end = position + 12 + length
        if end > len(view):
            break
        attributes, last_delta = struct.unpack_from(">hi", view, position + 21)
        if not attributes & CONTROL:
            batches.append(view[position:end])
        next_offset = base + last_delta + 1
        position = end
    return batches, next_offset


async def copy(args: argparse.Namespace) -> int:
    from aiokafka.client import AIOKafkaClient
    from aiokafka.protocol.fetch import FetchRequest
    from aiokafka.protocol.produce import ProduceRequest
    from aiokafka.protocol.transaction import InitProducerIdRequest
    from aiokafka.structs import TopicPartition

    source = AIOKafkaClient(bootstrap_servers=args.source, client_id="srm-bench-batch-copy")
    target = AIOKafkaClient(bootstrap_servers=args.target, client_id="srm-bench-batch-copy")
    await source.bootstrap()
    await target.bootstrap()
    try:
        await source._wait_on_metadata(args.topic)
        await target._wait_on_metadata(args.remote)
        for _ in range(60):  # a fresh broker answers "coordinator loading" for a while
            init = await target.send(target.get_random_node(), InitProducerIdRequest(None, 60_000))
            if init.error_code not in RETRIABLE_INIT:
                break
            await asyncio.sleep(0.5)
        if init.error_code:
            raise CopyRefused(f"InitProducerId answered error {init.error_code}")
        producer_id, epoch = init.producer_id, init.producer_epoch
        partitions = list(range(args.partitions))
        leaders = {p: source.cluster.leader_for_partition(TopicPartition(args.topic, p))
                   for p in partitions}  # fmt: skip
        writers = {p: target.cluster.leader_for_partition(TopicPartition(args.remote, p))
                   for p in partitions}  # fmt: skip
        if len(set(leaders.values())) != 1 or len(set(writers.values())) != 1:
            raise CopyRefused("the prototype copies from one source broker to one target broker")
        reader, writer = leaders[0], writers[0]
        offsets = dict.fromkeys(partitions, 0)
        sequences = dict.fromkeys(partitions, 0)
        copied = 0
        in_flight: asyncio.Queue[asyncio.Task[object] | None] = asyncio.Queue(PRODUCES_IN_FLIGHT)

        async def acknowledge() -> None:
            while (task := await in_flight.get()) is not None:
                answer = await task
                for topic, results in answer.topics:
                    for result in results:
                        if result[1]:
                            raise CopyRefused(f"{topic}-{result[0]}: Produce error {result[1]}")

        acknowledger = asyncio.create_task(acknowledge())
        while copied < args.records:
            if acknowledger.done():
                acknowledger.result()
            wanted = [(p, offsets[p], FETCH_PARTITION_BYTES) for p in partitions]
            fetched = await source.send(
                reader, FetchRequest(500, 1, FETCH_BYTES, 1, [(args.topic, wanted)])
            )
            # Kafka takes one v2 batch per partition in a Produce request: round k of the
            # requests carries the k-th batch of every partition that has one.
            rounds: list[list[tuple[int, bytearray]]] = []
            for _topic, results in fetched.topics:
                for result in results:
                    partition, error, aborted, records = result[0], result[1], result[5], result[-1]
                    if error:
                        raise CopyRefused(f"{args.topic}-{partition}: Fetch error {error}")
                    if aborted:
                        raise CopyRefused(f"{args.topic}-{partition}: aborted transactions")
                    if not records:
                        continue
                    batches, next_offset = split(records)
                    if next_offset < 0:
                        continue
                    for k, batch in enumerate(batches):
                        stamped = bytearray()
                        sequences[partition] = restamp(
                            stamped, batch, producer_id, epoch, sequences[partition]
                        )
                        copied += struct.unpack_from(">i", batch, 57)[0]
                        if k == len(rounds):
                            rounds.append([])
                        rounds[k].append((partition, stamped))
                    offsets[partition] = next_offset
            for produce in rounds:
                request = ProduceRequest(None, -1, 120_000, [(args.remote, produce)])
                while in_flight.full():  # an acknowledger that stopped on a refusal drains none
                    await asyncio.wait([acknowledger], timeout=0.05)
                    if acknowledger.done():
                        acknowledger.result()
                in_flight.put_nowait(asyncio.create_task(target.send(writer, request)))
        await in_flight.put(None)
        await acknowledger
        return 0
    finally:
        await source.close()
        await target.close()


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    from srm_bench.raw_loop import copy_arguments

    parser = argparse.ArgumentParser(prog="python -m srm_bench.batch_loop", description=__doc__)
    copy_arguments(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    try:
        code = asyncio.run(copy(args))
    except CopyRefused as exc:
        print(f"batch copy refused: {exc}", flush=True)
        return 1
    print("batch copy: every record copied; waiting for SIGTERM", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:  # as a replicator: the benchmark stops it
        signal.pause()
    return code  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
