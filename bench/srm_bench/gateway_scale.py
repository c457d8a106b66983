"""The gateway and the dashboard at a whole cluster's partition count, under ``make up``:

    PYTHONPATH=bench .venv/bin/python -m srm_bench.gateway_scale ping --seconds 300
    PYTHONPATH=bench .venv/bin/python -m srm_bench.gateway_scale setup --topics 1000
    PYTHONPATH=bench .venv/bin/python -m srm_bench.gateway_scale copied
    PYTHONPATH=bench .venv/bin/python -m srm_bench.gateway_scale spread --rate 500 &
    PYTHONPATH=bench .venv/bin/python -m srm_bench.gateway_scale measure
    PYTHONPATH=bench .venv/bin/python -m srm_bench.gateway_scale dashboard

``setup`` creates ``--topics`` topics of ``--partitions`` partitions (``scale.t00000``...)
on the source cluster in requests under KRaft's cap, waits until every partition has a
leader, writes ``--records`` records into every partition and checks every one was
acknowledged and every end offset grew by ``--records`` (or exits saying how many did
not); ``--remote`` creates their remote topics on the target first. ``copied`` waits
until every record of those partitions is on the target. ``spread`` writes ``--rate``
records/s round the partitions, so that all of them keep flowing. ``ping`` writes
``--rate`` records/s to a 1-partition topic on the target cluster and reads them back
from its remote topic on the source (copied the other way, by the 1-partition flow whose
p99 must hold): end-to-end latency per minute and after ``--warmup``
(:mod:`srm_bench.latency`). ``measure`` times the gateway's answers (``--repeat`` each,
through HTTP, median and worst) and reads the ping topic's figures from the gateway's
metrics. ``dashboard`` loads the dashboard in a headless Chromium over its DevTools pipe
(:mod:`srm_harness.browser`): wall-clock seconds until the page has drawn the answers of
its first refresh, in a new browser and loaded again, and what it drew. Nothing here is
asserted: it prints what it measured.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import Producer

from srm_bench.latency import measure_latency
from srm_bench.scale_data import ScaleDataset, create_topics, end_offsets, load, wait_until_led
from srm_bench.stack import admin_client

# What the dashboard drew, read in the page once it says it is loaded (``data-loaded``,
# set when the answers of its first refresh are all drawn). Requests: those the page
# started before that moment (it asks again every 5 s).
_IN_TIME = "e.startTime <= Number(document.body.dataset.loadMs)"
PAGE_FIGURES = {
    "in_page_ms": "Number(document.body.dataset.loadMs)",
    "partition_rows": "document.querySelectorAll('#partitions tbody tr').length",
    "topic_rows": "document.querySelectorAll('#topics tbody tr').length",
    "table_rows": "document.querySelectorAll('tr').length",
    "elements": "document.getElementsByTagName('*').length",
    "requests": f"performance.getEntriesByType('resource').filter(e => {_IN_TIME}).length",
    "kb": "Math.round(performance.getEntriesByType('resource').filter(e => "
    + _IN_TIME
    + ").reduce((sum, e) => sum + e.encodedBodySize, 0) / 1024)",
    "slowest": "performance.getEntriesByType('resource').filter(e => "
    + _IN_TIME
    + ").map(e => [Math.round(e.duration), new URL(e.name).pathname])"
    + ".sort((a, b) => b[0] - a[0])[0]",
    "counts": "document.getElementById('partition-counts').textContent",
    # ms after navigation: the page's HTML received, its script received, the first
    # request for data sent, the last answer received (then drawn: in_page_ms).
    "timeline_ms": "(() => { const r = performance.getEntriesByType('resource').filter(e => "
    + _IN_TIME
    + "), api = r.filter(e => !new URL(e.name).pathname.startsWith('/dashboard/')),"
    " js = r.find(e => e.name.endsWith('dashboard.js'));"
    " return [performance.getEntriesByType('navigation')[0].responseEnd, js && js.responseEnd,"
    " Math.min(...api.map(e => e.startTime)), Math.max(...api.map(e => e.responseEnd))]"
    ".map(Math.round); })()",
}
LOADED = "document.body.dataset.loaded === 'true'"


def _get(url: str) -> tuple[float, int, Any]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        body = response.read()
    return time.perf_counter() - started, len(body), json.loads(body) if body[:1] in b"{[" else None


def _dataset(args: argparse.Namespace) -> ScaleDataset:
    return ScaleDataset(args.topics, args.partitions, args.records, record_size=100)


def setup(args: argparse.Namespace) -> None:
    dataset = _dataset(args)
    names = dataset.topic_names()
    if args.remote:
        _create(args.target_bootstrap, [f"{args.source}.{n}" for n in names], args.partitions)
    _create(args.source_bootstrap, names, args.partitions)
    admin = admin_client(args.source_bootstrap)
    before = end_offsets(admin, dataset.source_partitions())
    try:
        seconds = load(args.source_bootstrap, dataset)
    except RuntimeError as exc:
        raise SystemExit(f"setup: {exc}") from None
    after = end_offsets(admin, dataset.source_partitions())
    short = short_partitions(dataset.source_partitions(), before, after, args.records)
    if short:
        raise SystemExit(
            f"setup: {len(short):,} of {dataset.total_partitions:,} partitions did not get"
            f" {args.records} records (topic, partition, end offset growth: None = unread):"
            f" {short[:5]}"
        )
    print(
        f"{args.topics} topics x {args.partitions} partitions x {args.records} records"
        f" = {dataset.total_records:,} records, every one acknowledged and counted at the"
        f" end offsets; loaded in {seconds:.1f} s",
        flush=True,
    )


def short_partitions(
    wanted: Sequence[tuple[str, int]],
    before: Mapping[tuple[str, int], int],
    after: Mapping[tuple[str, int], int],
    records: int,
) -> list[tuple[str, int, int | None]]:
    """The partitions of ``wanted`` whose end offset did not grow by ``records`` (a
    partition unread after is None); a partition unread before started empty."""
    short: list[tuple[str, int, int | None]] = []
    for tp in wanted:
        grew = after[tp] - before.get(tp, 0) if tp in after else None
        if grew != records:
            short.append((*tp, grew))
    return short


def _create(bootstrap: str, names: list[str], partitions: int) -> None:
    """Create what is missing of ``names``; wait until every partition has a leader."""
    admin = admin_client(bootstrap)
    listed = admin.list_topics(timeout=60).topics
    other = [n for n in names if n in listed and len(listed[n].partitions) != partitions]
    if other:
        raise SystemExit(
            f"{bootstrap}: {len(other)} topics exist with another partition count than"
            f" {partitions}, e.g. {other[0]} ({len(listed[other[0]].partitions)})"
        )
    missing = [n for n in names if n not in listed]
    if missing:
        seconds = create_topics(admin, missing, partitions)
        print(f"created {len(missing):,} topics on {bootstrap} in {seconds:.1f} s", flush=True)
    try:
        wait_until_led(admin, names, partitions, timeout=300)
    except TimeoutError as exc:
        raise SystemExit(f"{bootstrap}: {exc}") from None


def copied(args: argparse.Namespace) -> None:
    """Wait (at most ``--seconds``) until every source partition's end offset is reached
    by its remote partition's on the target."""
    wanted = _dataset(args).source_partitions()
    remote = {tp: (f"{args.source}.{tp[0]}", tp[1]) for tp in wanted}
    source, target = admin_client(args.source_bootstrap), admin_client(args.target_bootstrap)
    started = time.monotonic()
    while True:
        ends = end_offsets(source, wanted)
        copies = end_offsets(target, list(remote.values()))
        behind = {tp: ends[tp] - copies.get(remote[tp], 0) for tp in ends}
        late = sum(1 for n in behind.values() if n > 0)
        waited = time.monotonic() - started
        line = (
            f"after {waited:.0f} s ({time.strftime('%H:%M:%S', time.gmtime())} UTC): source"
            f" {sum(ends.values()):,} records in {len(ends):,} partitions, target"
            f" {sum(copies.values()):,}; {late:,} partitions behind"
            f" ({sum(n for n in behind.values() if n > 0):,} records)"
        )
        if (late == 0 and len(ends) == len(wanted)) or waited > args.seconds:
            print(("every record copied " if late == 0 else "gave up ") + line, flush=True)
            return
        if int(waited) % 30 < 5:
            print(line, flush=True)
        time.sleep(5)


def spread(args: argparse.Namespace) -> None:
    """``--rate`` records/s round every partition of the data set for ``--seconds``."""
    partitions = _dataset(args).source_partitions()
    failed: list[object] = []
    producer = Producer({"bootstrap.servers": args.source_bootstrap, "linger.ms": 5})
    started = time.monotonic()
    sent = 0
    while (elapsed := time.monotonic() - started) < args.seconds:
        while sent < int(elapsed * args.rate):
            topic, partition = partitions[sent % len(partitions)]
            producer.produce(
                topic,
                b"s" * 100,
                partition=partition,
                on_delivery=lambda err, _m: failed.append(err) if err else None,
            )
            sent += 1
        producer.poll(0)
        time.sleep(0.01)
    left = producer.flush(60)
    print(
        f"spread: {sent:,} records round {len(partitions):,} partitions in"
        f" {time.monotonic() - started:.0f} s; {left} unacknowledged, {len(failed)} failed",
        flush=True,
    )


def ping(args: argparse.Namespace) -> None:
    _create(args.target_bootstrap, [args.ping_topic], 1)
    result = measure_latency(
        label=f"{args.target}->{args.source} {args.ping_topic}",
        source=args.target_bootstrap,
        target=args.source_bootstrap,
        topic=args.ping_topic,
        remote=f"{args.target}.{args.ping_topic}",
        partitions=1,
        record_size=100,
        rate=int(args.rate),
        seconds=args.seconds,
        warmup=args.warmup,
        window_seconds=60,
    )
    figures = result.describe()
    windows = figures.pop("windows")
    print(f"ping {args.ping_topic} after {args.warmup:.0f} s warm-up: {json.dumps(figures)}")
    for window in windows:
        print(f"ping {args.ping_topic} per minute: {json.dumps(window)}", flush=True)


def measure(args: argparse.Namespace) -> None:
    base, flow = args.gateway.rstrip("/"), f"{args.source}/{args.target}"
    paths = [
        "/v2/replications",
        f"/v2/replications/{flow}",
        f"/v2/replications/{flow}/topics?sort=lag&limit=10",
        f"/v2/replications/{flow}/partitions?sort=lag&limit=10",
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
    back = f"{args.target}/{args.source}"
    for metric in ("replication-latency-ms-p99", "replication-latency-ms-p50", "record-count"):
        _, _, body = _get(
            f"{base}/v2/topic-metrics/{back}/{args.ping_topic}/{metric}?minutes={args.minutes}"
        )
        points = [(p["timestamp"], p["value"], p["closed"]) for p in body["series"]]
        print(f"{back} {args.ping_topic} {metric} per minute: {points}")


def dashboard(args: argparse.Namespace) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("dashboard: no chromium installed (apt-get install chromium)")
    from srm_harness.browser import Browser

    url = args.gateway.rstrip("/") + "/"
    for _ in range(args.repeat):
        with Browser(chromium) as browser:
            # A browser's first page (its renderer starts), then the page again, as
            # someone who has the dashboard open reloads it.
            for label, address in (("a new browser", url), ("loaded again", url + "?again")):
                figures = load_dashboard(browser, address)
                print(f"dashboard ({label}): {json.dumps(figures)}", flush=True)


def load_dashboard(browser: Any, url: str, timeout: float = 60.0) -> dict[str, Any]:
    """Load ``url`` in ``browser`` (an ``srm_harness.browser.Browser``): the wall-clock
    seconds until the page shows the data of its first refresh, and :data:`PAGE_FIGURES`;
    a page that did not get there says what it shows instead."""
    try:
        seconds = browser.load(url, until=LOADED, timeout=timeout)
    except TimeoutError:
        shown = browser.evaluate(
            "document.getElementById('updated')?.textContent ?? document.title"
        )
        return {"loaded": False, "after_s": timeout, "shows": shown}
    return {"loaded": True, "wall_clock_s": round(seconds, 3), **page_figures(browser)}


def page_figures(browser: Any) -> dict[str, Any]:
    """:data:`PAGE_FIGURES` of the page loaded in ``browser``."""
    return {name: browser.evaluate(expression) for name, expression in PAGE_FIGURES.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="srm_bench.gateway_scale", description=__doc__)
    steps = {
        "setup": setup,
        "copied": copied,
        "spread": spread,
        "ping": ping,
        "measure": measure,
        "dashboard": dashboard,
    }
    parser.add_argument("what", choices=tuple(steps))
    parser.add_argument("--source", default="primary")
    parser.add_argument("--target", default="backup")
    parser.add_argument("--source-bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--target-bootstrap", default="127.0.0.1:9192")
    parser.add_argument("--gateway", default="http://127.0.0.1:8080")
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--records", type=int, default=2, help="records per partition")
    parser.add_argument("--remote", action="store_true", help="create the remote topics too")
    parser.add_argument("--ping-topic", default="ping")
    parser.add_argument("--rate", type=float, default=50.0, help="records/s (ping, spread)")
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--warmup", type=float, default=60.0, help="ping: left out of p99")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--minutes", type=int, default=15)
    args = parser.parse_args(argv)
    steps[args.what](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
