"""The raw limit of a Python copy: the copy slot's clients with nothing in between.

``python -m srm_bench.raw_loop`` copies the data set from the source to
``primary.bench-data`` on the target the way SRM's copy slots do, in ``--processes``
processes (a copy slot each; partition ``p`` goes to process ``p % processes``), and keeps
running until SIGTERM, as a replicator does, so the benchmark measures it exactly as it
measures one (:func:`srm_bench.catchup.measure_catchup`: copy rate, steady CPU per GiB,
peak RSS of the process tree).

Each process builds its clients with the copy slot's own code and settings
(``srm_driver.copying.clients`` for the keys, ``srm_driver.copier.clients`` for the
librdkafka clients: an idempotent ``acks=all`` producer with the gap-less guarantee and a
delivery report per record, a ``read_committed`` consumer of assigned partitions), and per
record does only what any copy must: take it from ``consume()``, hand its key, value,
timestamp and headers to ``produce()`` for the same partition, count its delivery report.
What SRM's slot adds on top (the lease, reservations, the records in flight and their
offset syncs, the latency histogram, reports to the driver) is what this leaves out, so
SRM's rate over this one is the share of the client library's limit the slot reaches.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import FrameType

# Settings the benchmark tries; the raw limit is the best of them (raw.py).
WRITE_TIMEOUT_MS = 120_000


@dataclass(frozen=True)
class LoopSetting:
    """One way to run the loop: processes, and client keys over the copy slot's."""

    processes: int
    producer: dict[str, str] = field(default_factory=dict)
    consumer: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        keys = ", ".join(f"{k}={v}" for k, v in {**self.consumer, **self.producer}.items())
        plural = "es" if self.processes > 1 else ""
        return f"Python loop, {self.processes} process{plural}" + (f", {keys}" if keys else "")

    def arguments(self) -> list[str]:
        sets = [f"producer.{k}={v}" for k, v in self.producer.items()]
        sets += [f"consumer.{k}={v}" for k, v in self.consumer.items()]
        return ["--processes", str(self.processes), *(a for s in sets for a in ("--set", s))]


SETTINGS = (
    LoopSetting(1),
    LoopSetting(2),  # one per core, as the copy slots on local[*] here
    LoopSetting(4),
    LoopSetting(2, producer={"batch.size": "1048576", "linger.ms": "5"}),
)


def partitions_of(process: int, processes: int, partitions: int) -> list[int]:
    return [p for p in range(partitions) if p % processes == process]


def copy_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of a client-only copy of the data set (this loop, the batch loop)."""
    add = parser.add_argument
    add("--source", required=True, help="source bootstrap servers")
    add("--target", required=True, help="target bootstrap servers")
    add("--topic", required=True)
    add("--remote", required=True)
    add("--partitions", type=int, required=True)
    add("--records", type=int, required=True, help="records in the whole topic")


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m srm_bench.raw_loop", description=__doc__)
    copy_arguments(parser)
    add = parser.add_argument
    add("--processes", type=int, default=2)
    add("--set", action="append", default=[], metavar="producer.KEY=V|consumer.KEY=V")
    add("--child", type=int, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    if args.child is not None:
        return _copy(args)
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "srm_bench.raw_loop", *sys.argv[1:], "--child", str(n)]
        )  # fmt: skip
        for n in range(args.processes)
    ]

    def stop(_signum: int, _frame: FrameType | None) -> None:
        for child in children:
            child.terminate()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    codes = [child.wait() for child in children]
    if any(codes):
        print(f"raw loop: a process failed (exit codes {codes})", flush=True)
        return 1
    print("raw loop: every record copied; waiting for SIGTERM", flush=True)
    while True:  # as a replicator: the benchmark stops it
        signal.pause()


def _copy(args: argparse.Namespace) -> int:
    from confluent_kafka import TopicPartition
    from srm_driver.copier import clients
    from srm_driver.copying.clients import copier_consumer, copier_producer

    from srm_bench.dataset import expected_end_offsets
    from srm_bench.options import Dataset

    overrides: dict[str, dict[str, str]] = {"producer": {}, "consumer": {}}
    for item in args.set:
        side, _, key_value = item.partition(".")
        key, _, value = key_value.partition("=")
        overrides[side][key] = value
    ends = expected_end_offsets(Dataset(args.topic, args.partitions, 1, args.records))
    mine = {p: ends[p] for p in partitions_of(args.child, args.processes, args.partitions)}
    if not mine:
        return 0
    consumer_settings = copier_consumer({"bootstrap.servers": args.source, **overrides["consumer"]})
    consumer = clients.consumer(consumer_settings)
    failures: list[str] = []

    def delivered(error: object, _msg: object) -> None:
        if error is not None:
            failures.append(str(error))

    producer_keys = {"bootstrap.servers": args.target, **overrides["producer"]}
    producer = clients.producer(copier_producer(producer_keys, WRITE_TIMEOUT_MS), delivered)
    max_records = clients.max_poll_records(consumer_settings)
    consumer.assign([TopicPartition(args.topic, p, 0) for p in mine])
    remaining = sum(mine.values())
    produce, remote = producer.produce, args.remote
    deadline = time.monotonic() + 600 + args.records / 1000
    while remaining > 0 and not failures:
        if time.monotonic() > deadline:
            failures.append(f"{remaining} records not read before the deadline")
            break
        for msg in consumer.consume(max_records, 0.002 if len(producer) else 0.5):
            if msg.error() is not None:
                failures.append(str(msg.error()))
                break
            ts = msg.timestamp()[1]
            args_ = (remote, msg.value(), msg.key(), msg.partition(), None, None,
                     ts if ts > 0 else 0, msg.headers())  # fmt: skip
            while True:
                try:
                    produce(*args_)
                    break
                except BufferError:
                    producer.poll(0.01)
            remaining -= 1
        producer.poll(0)
    left = producer.flush(60)
    consumer.close()
    if failures or left:
        print(json.dumps({"failures": failures[:5], "unacknowledged": left}), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
