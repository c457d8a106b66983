"""srm_bench.gateway_scale's parts that need no cluster: the setup's checks that every
record was written, and the dashboard's figures read from a real headless Chromium
(skipped where none is installed) over a gateway served in the test."""

from __future__ import annotations

import http.server
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import srm_api_gateway
from srm_api_gateway.testing import CONFIG, big_history, served
from srm_bench.gateway_scale import load_dashboard, page_figures, short_partitions
from srm_bench.scale_data import ScaleDataset, load
from srm_common.config import load_config
from srm_harness.browser import Browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DASHBOARD = Path(srm_api_gateway.__file__).parent / "dashboard"


def test_short_partitions_are_those_whose_end_offset_did_not_grow_by_the_records() -> None:
    wanted = [("t", 0), ("t", 1), ("t", 2), ("u", 0)]
    before = {("t", 0): 5, ("t", 1): 5, ("t", 2): 5}  # u-0 was not there yet
    after = {("t", 0): 7, ("t", 1): 6, ("u", 0): 2}  # t-2 could not be read
    assert short_partitions(wanted, before, after, 2) == [("t", 1, 1), ("t", 2, None)]
    assert short_partitions(wanted, before, {**after, ("t", 1): 7, ("t", 2): 7}, 2) == []


def test_loading_fails_saying_so_when_records_are_not_acknowledged() -> None:
    """Nothing listens on port 1: every record times out, and the load says how many
    (where a flush with no delivery check returned as if done)."""
    dataset = ScaleDataset(topics=2, partitions=3, records=4, record_size=10)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="loading the scale data set") as raised:
        load("127.0.0.1:1", dataset, timeout=1.0)
    assert "_MSG_TIMED_OUT" in str(raised.value) or "timed out" in str(raised.value).lower()
    assert time.monotonic() - started < 30


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")
def test_the_dashboard_load_reports_when_data_is_shown_and_what_it_drew(tmp_path: Path) -> None:
    (tmp_path / "srm.yaml").write_text(CONFIG)
    config = load_config(tmp_path / "srm.yaml")
    with (
        served(config, envelopes=big_history(100, 10, halted=3)) as gateway,
        Browser(CHROMIUM) as browser,
    ):
        figures = load_dashboard(browser, f"{gateway}/")
        # The page asks again every 5 s: what the first refresh asked stays what it was.
        all_requests = "performance.getEntriesByType('resource').length"
        first = browser.evaluate(all_requests)
        deadline = time.monotonic() + 20
        while browser.evaluate(all_requests) == first and time.monotonic() < deadline:
            time.sleep(0.2)
        later, every = page_figures(browser), browser.evaluate(all_requests)
    assert figures["loaded"] is True
    assert 0 < figures["wall_clock_s"] < 60
    assert 0 < figures["in_page_ms"] < figures["wall_clock_s"] * 1000 + 100
    assert figures["partition_rows"] == 10, "the ten worst of 1,000"
    assert figures["topic_rows"] == 10
    assert figures["table_rows"] < 60, "flows, ten topics, ten partitions and the headers"
    assert "1,000 partitions" in figures["counts"] and "3 halted" in figures["counts"]
    # The page, its CSS and script, and the answers of one refresh: a dozen requests.
    assert 8 <= figures["requests"] <= 20
    assert figures["kb"] > 0
    assert later["requests"] == figures["requests"] < every, "the first refresh's"
    duration, path = figures["slowest"]
    assert duration >= 0 and path.startswith("/")


class _PageOnly(http.server.SimpleHTTPRequestHandler):
    """The dashboard's own files, and 404 for every API path it asks."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, directory=str(DASHBOARD.parent), **kwargs)

    def translate_path(self, path: str) -> str:
        return super().translate_path("/dashboard/index.html" if path == "/" else path)

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")
def test_a_dashboard_that_cannot_read_its_data_is_reported_with_what_it_shows() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PageOnly)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with Browser(CHROMIUM) as browser:
            figures = load_dashboard(browser, f"http://127.0.0.1:{server.server_port}/", 3.0)
    finally:
        server.shutdown()
    assert figures["loaded"] is False and figures["after_s"] == 3.0
    assert figures["shows"].startswith("cannot reach the gateway"), figures
