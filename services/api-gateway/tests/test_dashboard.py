"""The dashboard in a real headless Chromium (Debian's `chromium`): it renders the
figures the API returns, and a screenshot is kept as a test artifact
(.run/artifacts/dashboard.png). Skipped, with the reason, where no Chromium is
installed (`apt-get install chromium`; CI installs it)."""

from __future__ import annotations

import base64
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from srm_api_gateway.metric_store import MINUTE, MetricStore
from srm_api_gateway.testing import FLOW, big_history, get, served
from srm_common.config.model import SrmConfig
from srm_common.metrics.aggregate import Aggregate, Figures
from srm_common.metrics.raw import Histogram
from srm_harness.browser import Browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[3] / ".run" / "artifacts"


def chromium(*args: str) -> str:
    assert CHROMIUM is not None
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1280,1500",
            "--virtual-time-budget=15000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def now_store() -> MetricStore:
    """Ten minutes of 1-minute windows up to now for the flow and its topic orders."""
    store = MetricStore()
    start = int(time.time() * 1000) // MINUTE * MINUTE - 9 * MINUTE
    for i in range(10):
        records = 1200 + 60 * i
        figures = Figures(
            samples=1,
            records=records,
            bytes=records * 100,
            latency=Histogram.of([3] * (records - 12) + [40] * 12),
            latency_sum_ms=3 * records + 444,
            lag_records=7,
            lag_ms=350,
        )
        for level, subject in (
            ("flow", {"flow": FLOW}),
            ("topic", {"flow": FLOW, "topic": "orders"}),
        ):
            store.add(
                Aggregate(level, MINUTE, start + i * MINUTE, subject, i < 9, figures), "backup"
            )
    return store


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")
def test_the_dashboard_shows_what_the_api_says(config: SrmConfig) -> None:
    store = now_store()
    with served(config, store) as gateway:
        _, rate = get(f"{gateway}/v2/replication-metrics/primary/backup/record-rate?minutes=30")
        _, p99 = get(
            f"{gateway}/v2/replication-metrics/primary/backup/replication-latency-ms-p99?minutes=30"
        )
        dom = chromium("--dump-dom", f"{gateway}/")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "dashboard.png"
        chromium(f"--screenshot={shot}", f"{gateway}/")
    assert 'data-loaded="true"' in dom, dom[-2000:]
    newest_rate = rate["series"][-1]["value"]
    assert f"{newest_rate:g}" in dom.replace(",", ""), "the newest records/s"
    assert f"{p99['series'][-1]['value']} ms" in dom, "the newest latency p99"
    assert "orders" in dom and "primary.orders" in dom
    assert "another writer at offset 7" in dom, "the halted partition and its reason"
    assert "topics allowlist of primary-&gt;backup" in dom or "topics allowlist" in dom
    assert shot.stat().st_size > 10_000
    print(f"\ndashboard screenshot: {shot} ({shot.stat().st_size} bytes)")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")
def test_at_ten_thousand_partitions_the_dashboard_shows_counts_and_the_worst(
    config: SrmConfig,
) -> None:
    """1,000 topics x 10 partitions, 250 halted: the page asks for counts and the worst
    ten (not 10,000 rows) and loads, timed in wall-clock time in a real Chromium."""
    store = now_store()
    start = int(time.time() * 1000) // MINUTE * MINUTE
    for t in range(1000):
        for p in range(10):
            lag = t * 10 + p if t >= 995 else 0
            figures = Figures(samples=6, records=60, partitions=1, lag_records=lag, lag_ms=lag)
            subject = {"flow": FLOW, "topic": f"t{t:05d}", "partition": p}
            store.add(Aggregate("partition", MINUTE, start, subject, False, figures), "backup")
        topic = {"flow": FLOW, "topic": f"t{t:05d}"}
        figures = Figures(records=600, partitions=10, lag_records=t if t >= 995 else 0)
        store.add(Aggregate("topic", MINUTE, start, topic, False, figures), "backup")
    with (
        served(config, store, envelopes=big_history(1000, 10, halted=250)) as gateway,
        Browser(CHROMIUM) as browser,  # type: ignore[arg-type]
    ):
        seconds = browser.load(f"{gateway}/", until="document.body.dataset.loaded === 'true'")
        in_page_ms = browser.evaluate("document.body.dataset.loadMs")
        rows = browser.evaluate("document.querySelectorAll('#partitions tbody tr').length")
        counts = browser.evaluate("document.getElementById('partition-counts').textContent")
        topics = browser.evaluate(
            "document.querySelector('#topics tbody td:nth-child(2)').textContent"
        )
        worst = browser.evaluate(
            "document.querySelector('#partitions tbody td:nth-child(2)').textContent"
        )
        halted = browser.evaluate("document.getElementById('halted').textContent")
        shot = browser.call("Page.captureScreenshot", format="png")["data"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "dashboard-10000.png").write_bytes(base64.b64decode(shot))
    print(
        f"\ndashboard at 10,000 partitions: loaded in {seconds:.2f} s wall clock"
        f" ({in_page_ms} ms after navigation, as the page measured it); {rows} partition rows"
    )
    assert rows == 10, "the ten worst, not 10,000 rows"
    assert "10,000 partitions, 10,000 measured, 50 lagging" in counts and "250 halted" in counts
    assert (topics, worst) == ("t00999", "t00999-9")
    assert "and 150 more (250 halted)" in halted
