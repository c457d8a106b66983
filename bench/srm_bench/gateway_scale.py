"""The gateway and the dashboard at a whole cluster's partition count, under ``make up``:

    PYTHONPATH=bench .venv/bin/python -m srm_bench.gateway_scale setup --topics 1000
    PYTHONPATH=bench .venv/bin/python -m srm_bench.gateway_scale ping --seconds 600 &
    PYTHONPATH=bench .venv/bin/python -m srm_bench.gateway_scale measure

``setup`` creates ``--topics`` topics of ``--partitions`` partitions (``scale.t00000``...)
on the source cluster in chunks of 100 (KRaft refuses one CreateTopics that large) with
``--records`` records each; ``--remote`` creates their remote topics on the target
first, for a driver that cannot create that many itself. ``ping`` writes ``--rate``
records/s to a 1-partition topic on the target cluster (copied the other way, by the
1-partition flow whose p99 must hold). ``measure`` times the gateway's answers
(``--repeat`` each, through HTTP, median and worst) and a load of the dashboard in a
headless Chromium (wall clock, over its DevTools pipe), and reads the ping flow's latency
p99 from the gateway's metrics. Nothing here is asserted: it prints what it measured.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
import urllib.request
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def _get(url: str) -> tuple[float, int, Any]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        body = response.read()
    return time.perf_counter() - started, len(body), json.loads(body) if body[:1] in b"{[" else None


def setup(args: argparse.Namespace) -> None:
    names = [f"scale.t{i:05d}" for i in range(args.topics)]
    if args.remote:
        _create(args.target_bootstrap, [f"{args.source}.{n}" for n in names], args.partitions)
    _create(args.source_bootstrap, names, args.partitions)
    producer = Producer({"bootstrap.servers": args.source_bootstrap, "linger.ms": 20})
    for name in names:
        for i in range(args.records):
            producer.produce(
                name, key=str(i).encode(), value=b"x" * 100, partition=i % args.partitions
            )
        producer.poll(0)
    producer.flush(60)
    print(f"{len(names)} topics x {args.partitions} partitions, {args.records} records each")


def _create(bootstrap: str, names: list[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for start in range(0, len(names), 100):
        chunk = [
            NewTopic(n, num_partitions=partitions, replication_factor=1)
            for n in names[start : start + 100]
        ]
        for name, future in admin.create_topics(chunk).items():
            try:
                future.result(60)
            except Exception as exc:  # noqa: BLE001 - an existing topic is fine
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise SystemExit(f"cannot create {name}: {exc}") from None
        print(f"created {min(start + 100, len(names))}/{len(names)} on {bootstrap}", flush=True)


def ping(args: argparse.Namespace) -> None:
    _create(args.target_bootstrap, [args.ping_topic], 1)
    producer = Producer({"bootstrap.servers": args.target_bootstrap, "linger.ms": 0})
    end = time.monotonic() + args.seconds
    sent = 0
    while time.monotonic() < end:
        producer.produce(args.ping_topic, value=b"p" * 100)
        producer.poll(0)
        sent += 1
        time.sleep(1 / args.rate)
    producer.flush(30)
    print(f"{sent} records to {args.ping_topic}")


def measure(args: argparse.Namespace) -> None:
    base, flow = args.gateway.rstrip("/"), f"{args.source}/{args.target}"
    paths = [
        "/v2/replications",
        f"/v2/replications/{flow}",
        f"/v2/replications/{flow}/topics?sort=lag&limit=10",
        f"/v2/replications/{flow}/partitions?limit=10",
        f"/v2/replication-metrics/{flow}/replication-latency-ms-p99?minutes=30",
        "/v1/freshness",
        "/metrics",
    ]
    for path in paths:
        times, size, body = [], 0, None
        for _ in range(args.repeat):
            seconds, size, body = _get(base + path)
            times.append(seconds)
        extra = ""
        if isinstance(body, dict) and "counts" in body:
            extra = f" counts {body['counts']}"
        if path == "/v2/replications":
            extra = " " + str(
                [
                    (r["source"], r["target"], r["status"], r["partitions"])
                    for r in body["replications"]
                ]
            )
        print(
            f"GET {path}: median {statistics.median(times) * 1000:.0f} ms,"
            f" worst {max(times) * 1000:.0f} ms, {size:,} bytes{extra}"
        )
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("dashboard: no chromium installed (apt-get install chromium)")
    else:
        from srm_harness.browser import Browser

        loaded = "document.body.dataset.loaded === 'true'"
        for _ in range(args.repeat):
            with Browser(chromium) as browser:
                # A browser's first page (its renderer starts), then the page again, as
                # someone who has the dashboard open reloads it.
                cold = browser.load(f"{base}/", until=loaded)
                warm = browser.load(f"{base}/?again", until=loaded)
                counts = browser.evaluate("document.getElementById('partition-counts').textContent")
                rows = browser.evaluate("document.querySelectorAll('#partitions tbody tr').length")
            print(
                f"dashboard: loaded in {cold:.2f} s wall clock (a new browser), {warm:.2f} s"
                f" (loaded again); {rows} partition rows; {counts}"
            )
    back = f"{args.target}/{args.source}"
    for metric in ("replication-latency-ms-p99", "replication-latency-ms-p50", "record-count"):
        _, _, body = _get(
            f"{base}/v2/topic-metrics/{back}/{args.ping_topic}/{metric}?minutes={args.minutes}"
        )
        points = [(p["timestamp"], p["value"], p["closed"]) for p in body["series"]]
        print(f"{back} {args.ping_topic} {metric} per minute: {points}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="srm_bench.gateway_scale", description=__doc__)
    parser.add_argument("what", choices=("setup", "ping", "measure"))
    parser.add_argument("--source", default="primary")
    parser.add_argument("--target", default="backup")
    parser.add_argument("--source-bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--target-bootstrap", default="127.0.0.1:9192")
    parser.add_argument("--gateway", default="http://127.0.0.1:8080")
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--records", type=int, default=20)
    parser.add_argument("--remote", action="store_true", help="create the remote topics too")
    parser.add_argument("--ping-topic", default="ping")
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--minutes", type=int, default=15)
    args = parser.parse_args(argv)
    {"setup": setup, "ping": ping, "measure": measure}[args.what](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
