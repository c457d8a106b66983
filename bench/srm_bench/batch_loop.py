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

The protocol layer is the copy slot's own (:mod:`srm_driver.copier.wire`: one connection
per broker, requests written as a header beside the batches' own buffers, answers parsed
over one buffer with memoryviews, each batch re-stamped with a new header beside its
records, which are never copied); CRC-32C is the ``crc32c`` package's (hardware, about
8 GB/s here) when installed.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections import deque
from collections.abc import Sequence

from srm_driver.copier.wire.apis import FETCH, PRODUCE
from srm_driver.copier.wire.batches import UnsupportedBatch, record_count, restamp, split
from srm_driver.copier.wire.cluster import Cluster
from srm_driver.copier.wire.errors import BrokerError, WireError
from srm_driver.copier.wire.fetch import FetchedPartition, fetch_request, fetch_response
from srm_driver.copier.wire.fetch import raise_refusal as raise_fetch_refusal
from srm_driver.copier.wire.produce import Buffer, produce_request, produce_response
from srm_driver.copier.wire.produce import raise_refusal as raise_produce_refusal
from srm_driver.copier.wire.pump import Pump

FETCH_PARTITION_BYTES = 4 << 20
FETCH_BYTES = 64 << 20
PRODUCES_IN_FLIGHT = 5  # what an idempotent producer may have in flight per partition
WRITE_TIMEOUT_S = 120.0


class CopyRefused(RuntimeError):
    """A batch or an answer this prototype will not copy past (see the module docstring)."""


def _rounds(
    fetched: list[FetchedPartition], producer: tuple[int, int], sequences: dict[int, int],
    offsets: dict[int, int],
) -> tuple[list[list[tuple[int, list[Buffer]]]], int]:  # fmt: skip
    """Round k of the Produce requests carries the k-th batch of every partition that has
    one (Kafka takes one v2 batch per partition in a request); returns the rounds and the
    records in them, and moves ``offsets`` and ``sequences`` past them."""
    rounds: list[list[tuple[int, list[Buffer]]]] = []
    records = 0
    for answer in fetched:
        partition = answer.partition
        if answer.aborted:
            raise CopyRefused(f"{answer.topic}-{partition}: aborted transactions")
        batches, next_offset = split(answer.records)
        if next_offset < 0:
            continue
        for k, batch in enumerate(batches):
            header, rest, sequences[partition] = restamp(batch, *producer, sequences[partition])
            records += record_count(batch)
            if k == len(rounds):
                rounds.append([])
            rounds[k].append((partition, [header, rest]))
        offsets[partition] = next_offset
    return rounds, records


def copy(args: argparse.Namespace) -> int:
    pump = Pump()
    source = Cluster(args.source, client_id="srm-bench-batch-copy", pump=pump)
    target = Cluster(args.target, client_id="srm-bench-batch-copy", pump=pump)
    try:
        source.refresh([args.topic])
        target.refresh([args.remote])
        partitions = list(range(args.partitions))
        readers = {source.leader(args.topic, p) for p in partitions}
        writers = {target.leader(args.remote, p) for p in partitions}
        if len(readers) != 1 or len(writers) != 1:
            raise CopyRefused("the prototype copies from one source broker to one target broker")
        reader, writer = readers.pop(), writers.pop()
        producer = target.init_producer_id(writer)
        offsets = dict.fromkeys(partitions, 0)
        sequences = dict.fromkeys(partitions, 0)
        copied = 0
        in_flight: deque[int] = deque()

        def acknowledge(answer: memoryview) -> None:
            raise_produce_refusal(writer.broker, produce_response(answer))

        while copied < args.records:
            request = fetch_request(
                {args.topic: [(p, offsets[p]) for p in partitions]},
                max_wait_ms=500, min_bytes=1, max_bytes=FETCH_BYTES,
                partition_max_bytes=FETCH_PARTITION_BYTES,
            )  # fmt: skip
            answer = pump.wait(reader, reader.send(FETCH, [request]), WRITE_TIMEOUT_S)
            error, fetched = fetch_response(answer)
            raise_fetch_refusal(reader.broker, error, fetched)
            while in_flight and (done := writer.answer(in_flight[0])) is not None:
                in_flight.popleft()  # answered while the fetch was out
                acknowledge(done)
            rounds, records = _rounds(fetched, producer, sequences, offsets)
            copied += records
            for produce in rounds:
                if len(in_flight) >= PRODUCES_IN_FLIGHT:
                    acknowledge(pump.wait(writer, in_flight.popleft(), WRITE_TIMEOUT_S))
                body = produce_request({args.remote: produce}, timeout_ms=120_000)
                in_flight.append(writer.send(PRODUCE, body))
        while in_flight:
            acknowledge(pump.wait(writer, in_flight.popleft(), WRITE_TIMEOUT_S))
        return 0
    finally:
        source.close()
        target.close()


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    from srm_bench.raw_loop import copy_arguments

    parser = argparse.ArgumentParser(prog="python -m srm_bench.batch_loop", description=__doc__)
    copy_arguments(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    try:
        code = copy(args)
    except (CopyRefused, UnsupportedBatch, BrokerError, WireError) as exc:
        print(f"batch copy refused: {exc}", flush=True)
        return 1
    print("batch copy: every record copied; waiting for SIGTERM", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:  # as a replicator: the benchmark stops it
        signal.pause()
    return code  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
