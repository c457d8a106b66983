"""The metrics aggregator's folds at a whole cluster's partition count, in one process:
``--partitions`` partitions' samples every ``--interval-ms`` (as drivers write them:
grouped, version 2, or ``--v1`` one record per partition) folded through the raw fold and
the merge with the service's settings (windows 1m and 1h, updates every 5 s), on a
simulated clock, over ``--minutes`` of samples. No Kafka: this measures the folds' own
work, which Faust adds its changelog and sends to.

    PYTHONPATH=bench .venv/bin/python -m srm_bench.aggregator_scale --partitions 10000

It prints, per simulated minute, the CPU seconds the folds took for that minute of
samples (keeping up means well under 60 s, on one instance), the records read and sent,
and at the end the state's size and the process's peak RSS; ``--json FILE`` writes them.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time
import zlib
from collections import Counter
from pathlib import Path

from srm_common.metrics.grouping import grouped, raw_partition
from srm_common.metrics.raw import Histogram, PartitionSample, encode
from srm_metrics_aggregator.fold_records import CONTRIBUTIONS, Out
from srm_metrics_aggregator.fold_settings import Settings
from srm_metrics_aggregator.merger import Merger
from srm_metrics_aggregator.raw_folder import RawFolder

RAW_PARTITIONS = 6
T0 = 1_700_000_040_000


def samples(n: int, topics: int, at_ms: int, seq: int, rng: random.Random) -> list[PartitionSample]:
    """One interval of every partition: a tenth of them busy (a lag too), the rest idle
    and caught up."""
    out = []
    for i in range(n):
        busy = rng.random() < 0.1
        count = rng.randrange(1, 200) if busy else 0
        topic = f"topic-{i % topics:05d}"
        out.append(
            PartitionSample(
                id=f"d1/bench/{seq + i}",
                at_ms=at_ms,
                interval_ms=10_000,
                flow="primary->backup",
                topic=topic,
                partition=i // topics,
                remote_topic=f"primary.{topic}",
                records=count,
                bytes=count * 100,
                latency=Histogram.of([3] * count),
                latency_sum_ms=3 * count,
                latency_min_ms=3 if count else None,
                latency_max_ms=3 if count else None,
                lag_records=rng.randrange(50) if busy else 0,
                lag_ms=rng.randrange(500) if busy else 0,
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="srm_bench.aggregator_scale", description=__doc__)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=1_000)
    parser.add_argument("--minutes", type=int, default=3)
    parser.add_argument("--interval-ms", type=int, default=10_000)
    parser.add_argument("--v1", action="store_true", help="one record per partition")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)

    now = [T0 / 1000]
    settings = Settings()  # the service's defaults: 1m and 1h windows, updates every 5 s
    raw_state: dict[str, bytes] = {}
    merge_state: dict[str, bytes] = {}
    folder = RawFolder(raw_state, settings, clock=lambda: now[0])
    merger = Merger(merge_state, settings, clock=lambda: now[0])
    offsets: Counter[int] = Counter()
    sent: Counter[str] = Counter()

    def route(outs: list[Out]) -> None:
        pending = list(outs)
        while pending:
            out = pending.pop()
            sent[out.role] += 1
            if out.role == CONTRIBUTIONS:
                q = zlib.crc32(out.key or b"") % RAW_PARTITIONS
                offsets[100 + q] += 1
                pending.extend(merger.merge(q, out.key, out.value, offsets[100 + q]))

    rng = random.Random(1)
    per_minute = []
    read = 0
    cpu_minute = 0.0
    intervals = args.minutes * 60_000 // args.interval_ms
    seq = 0
    for n in range(intervals):
        at_ms = T0 + (n + 1) * args.interval_ms
        batch = samples(args.partitions, args.topics, at_ms, seq, rng)
        seq += args.partitions
        if args.v1:
            records = [(raw_partition(s.key(), RAW_PARTITIONS), s.key(), encode(s)) for s in batch]
        else:
            records = [(p, g.key(), encode(g)) for p, g in grouped(batch, RAW_PARTITIONS)]
        started = time.process_time()
        for partition, key, value in records:
            offsets[partition] += 1
            # The interval's records arrive spread over it: the clock moves with them.
            now[0] += args.interval_ms / 1000 / len(records)
            route(folder.fold(partition, key, value, offsets[partition]))
            route(folder.flush())
            route(merger.flush())
        cpu_minute += time.process_time() - started
        read += len(records)
        if (n + 1) * args.interval_ms % 60_000 == 0:
            per_minute.append(round(cpu_minute, 2))
            print(
                f"minute {len(per_minute)}: {cpu_minute:.2f} CPU s for 60 s of samples;"
                f" {read} raw records read so far; sent {dict(sent)}",
                flush=True,
            )
            cpu_minute = 0.0
    state_bytes = sum(len(k) + len(v) for s in (raw_state, merge_state) for k, v in s.items())
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures = {
        "partitions": args.partitions,
        "topics": args.topics,
        "interval_ms": args.interval_ms,
        "format": "v1" if args.v1 else "v2 grouped",
        "raw_records_per_interval": read / intervals,
        "cpu_s_per_minute": per_minute,
        "state_keys": len(raw_state) + len(merge_state),
        "state_mb": round(state_bytes / 2**20, 1),
        "peak_rss_mb": round(peak_mb, 1),
        "sent": dict(sent),
        "counts": {"raw": dict(folder.counts), "merge": dict(merger.counts)},
    }
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
