"""End-to-end replication latency at a steady produce rate.

While a replicator runs (after its catch-up), records are produced to the source at
``rate`` records/s for ``seconds``, each with CreateTime = now and its sequence number
and send time (µs) in the first 16 bytes of its value. A consumer on the target reads
the remote topic and takes ``receive time - record timestamp`` for each record (both
replicators keep the source's CreateTime; a record whose timestamp differs from the send
time in its value is counted as ``timestamps_changed``, and its latency is taken from
the value instead). Records sent during the first ``warmup`` seconds are left out of the
percentiles; ``windows`` keeps p50/p99/max of every 5 s (``window_seconds``) of the
whole phase, warm-up included, so a transient stays visible.

Why the phase starts with ``sync``: the catch-up just wrote the data set to the target's
log (and the load wrote it to the source's); Linux writes such pages back about 30 s
after they were first dirtied, all at once, which put a gigabyte of writeback inside the
measured seconds of a fast replicator and not of a slow one (sampled from /proc/meminfo:
1 GB of Dirty went to disk 28 s into one phase, whose 5 s window had a p99 of 131 ms
against 5-9 ms around it). Flushing first takes that out of every replicator's phase.

Why 15 s of warm-up: on a 2-core machine, right after a replicator's catch-up both
brokers (and the replicator's JVM) recompile for the new, small-request workload; their
C2 compiler threads take 30-60 % of a core each for about 15 s (sampled per thread from
/proc), and every replicator's latency suffers the same way meanwhile.
"""

from __future__ import annotations

import math
import os
import struct
import threading
import time
from dataclasses import asdict, dataclass
from typing import Protocol

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from srm_bench.progress import say
from srm_bench.stack import admin_client, wait_for_topic

_HEADER = struct.Struct(">QQ")  # sequence number, send time in µs since the epoch
DRAIN_SECONDS = 60.0
WINDOW_SECONDS = 5
_WINDOW_KEYS = ("p50_ms", "p99_ms", "max_ms")


@dataclass(frozen=True)
class LatencyResult:
    p50_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    measured: int
    expected: int
    lost: int
    duplicates: int
    timestamps_changed: int
    sent: int
    send_rate: float
    # p50, p99 and max (ms) of each window_seconds of the phase, warm-up included.
    windows: tuple[tuple[float, float, float], ...] = ()
    window_seconds: int = WINDOW_SECONDS
    # seconds the sync(2) before the phase took (the catch-up's writes going to disk)
    flush_seconds: float = 0.0

    def describe(self) -> dict[str, object]:
        values = asdict(self)
        values["windows"] = [
            {
                "start_s": i * self.window_seconds,
                **{
                    k: None if math.isnan(v) else round(v, 2)
                    for k, v in zip(_WINDOW_KEYS, w, strict=True)
                },
            }
            for i, w in enumerate(self.windows)
        ]
        return {k: round(v, 2) if isinstance(v, float) else v for k, v in values.items()}


def windows(
    latency_ms: dict[int, float], sent: int, rate: int, seconds: int = WINDOW_SECONDS
) -> tuple[tuple[float, float, float], ...]:
    """(p50, p99, max) of the records sent in each ``seconds`` (by sequence number:
    record ``n`` was sent at ``n / rate`` s); a window with nothing received is NaN."""
    per_window = rate * seconds
    result = []
    for first in range(0, sent, per_window):
        values = sorted(
            latency_ms[n] for n in range(first, min(sent, first + per_window)) if n in latency_ms
        )
        top = values[-1] if values else math.nan
        result.append((percentile(values, 50), percentile(values, 99), top))
    return tuple(result)


def percentile(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending list (NaN when empty)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(pct / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


class Receiver(threading.Thread):
    """Reads the assigned partitions of the target from the given offsets; latency per
    sequence number (the value's first 16 bytes; anything shorter is not ours)."""

    def __init__(self, bootstrap: str, assignment: list[TopicPartition]) -> None:
        super().__init__(name="latency-receiver", daemon=True)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "srm-bench-latency",  # required by librdkafka; never joined
                "enable.auto.commit": False,
                "log_level": 2,
            }
        )
        self.assignment = assignment
        self.latency_ms: dict[int, float] = {}
        self.duplicates = 0
        self.timestamps_changed = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        self.consumer.assign(self.assignment)
        try:
            while not self.stopping.is_set():
                # poll() returns as soon as a record is there; consume(n, timeout) would
                # wait out its timeout unless n records came, adding up to that timeout to
                # every measurement. What else is already here comes without waiting.
                first = self.consumer.poll(0.1)
                received_ms = time.time() * 1000
                if first is None:
                    continue
                for message in [first, *self.consumer.consume(500, timeout=0)]:
                    if message.error() is None:
                        self._record(message.value(), message.timestamp()[1], received_ms)
        finally:
            self.consumer.close()

    def _record(self, value: bytes | None, timestamp_ms: int, received_ms: float) -> None:
        if value is None or len(value) < _HEADER.size:
            return
        sequence, sent_us = _HEADER.unpack_from(value)
        if sequence in self.latency_ms:
            self.duplicates += 1
            return
        if timestamp_ms != sent_us // 1000:
            self.timestamps_changed += 1
            timestamp_ms = sent_us // 1000
        self.latency_ms[sequence] = received_ms - timestamp_ms


def measure_latency(
    *,
    label: str,
    source: str,
    target: str,
    topic: str,
    remote: str,
    partitions: int,
    record_size: int,
    rate: int,
    seconds: float,
    warmup: float,
    window_seconds: int = WINDOW_SECONDS,
) -> LatencyResult:
    """Produce at ``rate`` for ``seconds`` and measure; see the module docstring."""
    flush_seconds = flush_writes()
    say(f"  {label}: wrote the catch-up's pages to disk before measuring ({flush_seconds:.1f} s)")
    if not wait_for_topic(admin_client(target), remote, partitions, 60):
        say(f"  {label}: {remote} not on the target after 60 s; producing anyway")
    receiver = Receiver(
        target, [TopicPartition(remote, p, OFFSET_BEGINNING) for p in range(partitions)]
    )
    receiver.start()
    say(f"  {label}: latency: {rate} records/s for {seconds:.0f} s ({warmup:.0f} s warm-up)")
    sent, send_seconds = _produce_steadily(source, topic, partitions, record_size, rate, seconds)
    result = collect(
        receiver,
        sent=sent,
        send_seconds=send_seconds,
        rate=rate,
        warmup=warmup,
        window_seconds=window_seconds,
        flush_seconds=flush_seconds,
    )
    say(
        f"  {label}: latency p50 {result.p50_ms:.1f} ms, p99 {result.p99_ms:.1f} ms "
        f"({result.measured:,} records, {result.lost} missing)"
    )
    return result


def flush_writes() -> float:
    """sync(2): every dirty page to disk now rather than during the phase; its seconds."""
    started = time.monotonic()
    os.sync()
    return time.monotonic() - started


class Receiving(Protocol):
    """A receiver thread of the latency phase: latency per sequence number as it reads."""

    latency_ms: dict[int, float]
    duplicates: int
    timestamps_changed: int
    stopping: threading.Event

    def join(self, timeout: float | None = None) -> None: ...


def collect(
    receiver: Receiving,
    *,
    sent: int,
    send_seconds: float,
    rate: int,
    warmup: float,
    window_seconds: int = WINDOW_SECONDS,
    flush_seconds: float = 0.0,
) -> LatencyResult:
    """Wait up to DRAIN_SECONDS for every record sent after the warm-up, stop the receiver
    and sum up what it read."""
    expected = set(range(min(sent, int(warmup * rate)), sent))
    deadline = time.monotonic() + DRAIN_SECONDS
    while time.monotonic() < deadline and not all(s in receiver.latency_ms for s in expected):
        time.sleep(0.2)
    receiver.stopping.set()
    receiver.join()
    values = sorted(receiver.latency_ms[s] for s in expected if s in receiver.latency_ms)
    return LatencyResult(
        p50_ms=percentile(values, 50),
        p99_ms=percentile(values, 99),
        mean_ms=sum(values) / len(values) if values else math.nan,
        max_ms=values[-1] if values else math.nan,
        measured=len(values),
        expected=len(expected),
        lost=len(expected) - len(values),
        duplicates=receiver.duplicates,
        timestamps_changed=receiver.timestamps_changed,
        sent=sent,
        send_rate=sent / send_seconds,
        windows=windows(receiver.latency_ms, sent, rate, window_seconds),
        window_seconds=window_seconds,
        flush_seconds=flush_seconds,
    )


def _produce_steadily(
    bootstrap: str, topic: str, partitions: int, record_size: int, rate: int, seconds: float
) -> tuple[int, float]:
    """Send ``rate`` records/s for ``seconds``; returns (records sent, seconds taken)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 0,
            "log_level": 2,
        }
    )
    padding = bytes(max(0, record_size - _HEADER.size))
    started = time.monotonic()
    sent = 0
    last_report = started
    while (elapsed := time.monotonic() - started) < seconds:
        while sent < int(elapsed * rate):
            now_us = time.time_ns() // 1000
            value = _HEADER.pack(sent, now_us) + padding
            producer.produce(topic, value, partition=sent % partitions, timestamp=now_us // 1000)
            sent += 1
        producer.poll(0)
        if time.monotonic() - last_report >= 10:
            say(f"  latency: {sent:,} records sent ({elapsed:.0f}/{seconds:.0f} s)")
            last_report = time.monotonic()
        time.sleep(0.002)
    taken = time.monotonic() - started
    if producer.flush(30):
        raise RuntimeError(f"latency producer: records to {topic} unacknowledged after 30 s")
    return sent, taken
