"""What attached consumers cost a source broker's producers, by the partitions each fetches.

One fresh single-broker source of ``--partitions`` partitions (10 a topic); a producer warms
every partition up (metadata, a first batch), then for each width in ``--widths``:
consumers of at most that many partitions each (``read_committed``, librdkafka's defaults,
as a copy loop's) are attached to all of the partitions, and the producer sends ``--rate``
records/s spread over every partition for ``--seconds``. The figures are the source's
acknowledgement times of those records (p50, p99, max), and the host's memory stall
(``/proc/pressure/memory``, ``some avg10``, the highest seen while they were sent and
acknowledged). Width 0: no consumer attached. (Its first runs found the source's
acknowledgements collapsing to tens of seconds at times, with consumers of any width and
with none: docs/benchmark.md, "Scale".)

    PYTHONPATH=bench .venv/bin/python -m srm_bench.fetch_width --partitions 5000 \\
        --widths 0,5000,2500,1000,500,250
"""

from __future__ import annotations

import argparse
import struct
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from srm_bench.host_limits import broker_heap, prepare
from srm_bench.latency import percentile
from srm_bench.progress import say
from srm_bench.scale_data import create_topics, topic_name, wait_until_led
from srm_bench.stack import BenchStack

_SENT = struct.Struct(">d")  # send time, ms
PER_TOPIC = 10
# The share of time some task of this host waited for memory (reclaim), last 10 s.
MEMORY_PRESSURE = Path("/proc/pressure/memory")


def memory_stall() -> float:
    """``some avg10`` of the host's memory pressure, percent (NaN where Linux has no PSI)."""
    try:
        first = MEMORY_PRESSURE.read_text().splitlines()[0]
        return float(dict(f.split("=") for f in first.split()[1:])["avg10"])
    except (OSError, ValueError, KeyError, IndexError):
        return float("nan")


class Readers:
    """Consumers of at most ``width`` partitions each, reading on threads of their own."""

    def __init__(self, bootstrap: str, partitions: list[tuple[str, int]], width: int) -> None:
        self.stopping = threading.Event()
        self.read = [0] * (-(-len(partitions) // width) if width else 0)
        self.threads = [
            threading.Thread(target=self._read, args=(bootstrap, partitions[i : i + width], n))
            for n, i in enumerate(range(0, len(partitions), width) if width else ())
        ]
        for thread in self.threads:
            thread.start()

    def _read(self, bootstrap: str, chunk: list[tuple[str, int]], n: int) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "srm-bench-fetch-width",  # never joined: assigned partitions
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "log_level": 2,
            }
        )
        consumer.assign([TopicPartition(t, p, -1) for t, p in chunk])  # from the end
        try:
            while not self.stopping.is_set():
                self.read[n] += len(consumer.consume(1000, 0.1))
        finally:
            consumer.close()

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(30)


def measure(
    producer: Producer, partitions: list[tuple[str, int]], rate: int, seconds: float
) -> tuple[list[float], int, float]:
    """Acknowledgement times (ms, sorted) of ``rate`` records/s for ``seconds``, record ``n``
    to partition ``n mod P``; how many were still unacknowledged after 120 s; and the
    highest memory stall of the host seen meanwhile (percent)."""
    acked: list[float] = []
    stalls = [memory_stall()]

    def acknowledged(error: object, message: object) -> None:
        if error is None:
            sent = _SENT.unpack_from(message.value())[0]  # type: ignore[attr-defined]
            acked.append(time.time() * 1000 - sent)

    padding = bytes(1024 - _SENT.size)
    started = time.monotonic()
    sent = 0
    sample = started + 1
    while (elapsed := time.monotonic() - started) < seconds:
        while sent < int(elapsed * rate):
            topic, partition = partitions[sent % len(partitions)]
            producer.produce(topic, _SENT.pack(time.time() * 1000) + padding,
                             partition=partition, on_delivery=acknowledged)  # fmt: skip
            sent += 1
        producer.poll(0)
        time.sleep(0.002)
        if time.monotonic() >= sample:
            sample += 1
            stalls.append(memory_stall())
    deadline = time.monotonic() + 120
    while len(producer) and time.monotonic() < deadline:
        producer.flush(1)
        stalls.append(memory_stall())
    return sorted(acked), len(producer), max(stalls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=5000, help="total, 10 a topic")
    parser.add_argument("--widths", default="0,5000,1000,500,250", help="partitions a consumer")
    parser.add_argument("--rate", type=int, default=500, help="records/s (500)")
    parser.add_argument("--seconds", type=float, default=30.0, help="per width (30)")
    parser.add_argument("--settle", type=float, default=20.0, help="consumers' start (20)")
    parser.add_argument("--folder", type=Path, default=Path(".run/bench-fetch-width"))
    args = parser.parse_args(argv)
    try:
        widths = [int(w) for w in args.widths.split(",")]
    except ValueError:
        parser.error(f"--widths {args.widths!r}: give whole numbers, e.g. 0,5000,500")
    if args.partitions < PER_TOPIC or any(w < 0 for w in widths):
        parser.error("--partitions must be at least 10 and --widths at least 0")
    for problem in prepare(args.partitions):
        parser.error(problem)
    stack = BenchStack(args.folder, heap=broker_heap(args.partitions))
    say(f"fetch width: starting a source of {args.partitions:,} partitions in {args.folder}")
    stack.start()
    try:
        admin = stack.source_admin()
        names = [topic_name(i) for i in range(args.partitions // PER_TOPIC)]
        create_topics(admin, names, PER_TOPIC)
        wait_until_led(admin, names, PER_TOPIC, 300)
        partitions = [(t, p) for t in names for p in range(PER_TOPIC)]
        bootstrap = stack.source.bootstrap_servers
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "log_level": 2,
            }
        )
        warm, _, _ = measure(producer, partitions, len(partitions), 1.0)
        say(f"  warmed every partition up (acks p99 {percentile(warm, 99):,.0f} ms)")
        for width in widths:
            readers = Readers(bootstrap, partitions, width)
            time.sleep(args.settle)
            acks, left, stall = measure(producer, partitions, args.rate, args.seconds)
            readers.stop()
            who = f"{len(readers.threads)} consumers of {width}" if width else "no consumer"
            say(
                f"  {who}: acks p50 {percentile(acks, 50):,.0f} ms, p99"
                f" {percentile(acks, 99):,.0f} ms, max {acks[-1] if acks else 0:,.0f} ms;"
                f" {left} unacknowledged; consumers read {sum(readers.read):,}; the host's"
                f" memory stall up to {stall:.1f} %"
            )
    finally:
        stack.stop(keep_data=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
