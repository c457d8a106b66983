"""What one copy slot report and one answer cost at a partition count, whole (copy
protocol 1, and protocol 2's full reports) against protocol 2's deltas: bytes on the wire
and the driver's time to read a report (``json.loads`` and
:func:`srm_driver.copying.protocol.parse_report`, the median of ``--runs``). Entries have
the fields and sizes the copy slot sends (``srm_driver.copier.partition``); no Kafka, no Spark.

    PYTHONPATH=bench .venv/bin/python -m srm_bench.slot_protocol --partitions 1500,3000

A slot reports every 200 ms; a delta lists the partitions whose entry changed since the
last report taken in, so ``--changed`` gives the shares of partitions that changed in
200 ms (0: an idle flow; 1.0: every partition copying, as large as a whole report).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from srm_driver.copying.protocol import PartitionPlan, parse_report

FLOW = "primary->backup"
SETTINGS = {
    "consumer": {"bootstrap.servers": "127.0.0.1:9092", "enable.auto.commit": "false"},
    "producer": {"bootstrap.servers": "127.0.0.1:9093", "enable.idempotence": "true"},
    "origin_header": None,
    "copy_header": None,
    "source": "primary",
    "target": "backup",
    "poll_ms": 100,
}


def entry(index: int) -> dict[str, object]:
    """A partition's report entry after it copied its 20 records."""
    return {
        "topic": f"scale.t{index // 10:05d}",
        "partition": index % 10,
        "plan": 100_000 + index,
        "state": "sending",
        "acked_up": 20,
        "acked_down": 20,
        "next_send": 20,
        "outstanding": 0,
        "records": 20,
        "bytes": 20_480,
        "dropped": 0,
        "latency_sum_ms": 412,
        "latency_max_ms": 31,
        "latency_min_ms": 12,
        "latency_hist": [0, 0, 3, 10, 7, *([0] * 15)],
        "source_end": 20,
        "pending_ts": -1,
        "syncs": [],
        "error": None,
        "uncertain": False,
    }


def report(listed: int, *, full: bool | None) -> bytes:
    """A report listing ``listed`` partitions; ``full`` None: protocol 1."""
    unit = {
        "flow": FLOW,
        "epoch": 0,
        "applied": 40,
        "broken": None,
        "broken_epoch": -1,
        "poll_error": None,
        "exited": False,
        "lease_ms": 3870,
        "partitions": [entry(index) for index in range(listed)],
    }
    body: dict[str, object] = {
        "job": "3f2a",
        "slot": 0,
        "seq": 41,
        "answered": 40,
        "lease_ms": 3870,
        "exiting": False,
        "units": [unit],
    }
    if full is not None:
        body |= {"protocol": 2, "full": full}
    return json.dumps(body).encode()


def answer(changed: int, *, base: bool) -> bytes:
    """An answer with ``changed`` plans: whole, or a delta onto ``base``."""
    plans = [
        PartitionPlan(f"scale.t{i // 10:05d}", i % 10, 100_000 + i, f"primary.scale.t{i // 10:05d}",
                      0, 0, 120).to_json()
        for i in range(changed)
    ]  # fmt: skip
    unit: dict[str, object] = {"epoch": 0, "lease_ms": 4000, "partitions": plans}
    body: dict[str, object] = {
        "protocol": 2,
        "version": 41,
        "lease_ms": 4000,
        "report_ms": 200,
        "stop": False,
        "refused": [],
        "units": {FLOW: unit},
    }
    if base:
        body |= {"base": 40, "full": False}
        unit["removed"] = []
    else:
        unit["settings"] = SETTINGS
    return json.dumps(body).encode()


def read_ms(raw: bytes, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        parse_report(json.loads(raw))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="srm_bench.slot_protocol", description=__doc__)
    parser.add_argument("--partitions", default="1500,3000", help="counts, comma separated")
    parser.add_argument("--changed", default="0,0.01,0.1", help="shares changed per report")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    rows = []
    for count in (int(n) for n in args.partitions.split(",")):
        cases = [("report", "whole", count, report(count, full=None))]
        for share in (float(s) for s in args.changed.split(",")):
            changed = int(count * share)
            cases.append(
                ("report", f"delta {share:.0%} changed", changed, report(changed, full=False))
            )
        cases.append(("answer", "whole", count, answer(count, base=False)))
        for share in (float(s) for s in args.changed.split(",")):
            changed = int(count * share)
            cases.append(
                ("answer", f"delta {share:.0%} changed", changed, answer(changed, base=True))
            )
        for kind, label, listed, raw in cases:
            row = {
                "kind": kind,
                "partitions": count,
                "case": label,
                "listed": listed,
                "bytes": len(raw),
            }
            if kind == "report":
                row["read_ms"] = round(read_ms(raw, args.runs), 2)
            rows.append(row)
            read = f"  read {row['read_ms']:8.2f} ms" if "read_ms" in row else ""
            print(f"{kind:6s} {count:6,d} partitions  {label:22s} {len(raw):11,d} bytes{read}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
