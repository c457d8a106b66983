"""Metric endpoints over a store of aggregates (no Kafka): SRM's series shape, remote
topics resolved through the mappings (the identity policy too), freshness, and a
Prometheus scrape parsed with prometheus_client's own parser."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families
from srm_api_gateway.metric_store import HOUR, MINUTE, MetricStore
from srm_api_gateway.testing import FLOW, get, served
from srm_common.config.model import SrmConfig
from srm_common.metrics.aggregate import Aggregate, Figures
from srm_common.metrics.raw import Histogram, TopicMapping

T0 = 1_700_000_040_000  # a minute boundary


def window(level: str, subject: dict, start: int, records: int, latencies: list[int], **more):  # type: ignore[no-untyped-def]
    figures = Figures(
        samples=1,
        records=records,
        bytes=records * 100,
        latency=Histogram.of(latencies),
        latency_sum_ms=sum(latencies),
        latency_min_ms=min(latencies, default=None),
        latency_max_ms=max(latencies, default=None),
        **more,
    )
    return Aggregate(level, MINUTE, start, subject, True, figures)


@pytest.fixture
def store() -> MetricStore:
    store = MetricStore()
    topic = {"flow": FLOW, "topic": "orders"}
    store.add(window("topic", topic, T0, 600, [3] * 590 + [40] * 10, lag_records=5), "backup")
    store.add(window("topic", topic, T0 + MINUTE, 1200, [4] * 1200, lag_records=0), "backup")
    store.add(window("flow", {"flow": FLOW}, T0 + MINUTE, 1200, [4] * 1200, lag_ms=900), "backup")
    store.add(
        TopicMapping("d1/a/1", T0, 0, FLOW, topic="orders", remote_topic="primary.orders"), "backup"
    )
    return store


@pytest.fixture
def gateway(config: SrmConfig, store: MetricStore) -> Iterator[str]:
    with served(config, store) as url:
        yield url


RANGE = f"from={T0}&to={T0 + 2 * MINUTE}"
ORDERS = "v2/topic-metrics/primary/backup/orders"


def test_a_topic_metric_is_a_series_with_min_max_avg_sum(gateway: str) -> None:
    status, body = get(f"{gateway}/{ORDERS}/record-count?{RANGE}")
    assert status == 200
    assert [p["value"] for p in body["series"]] == [600, 1200]
    assert body["aggregate"] == {"min": 600, "max": 1200, "avg": 900.0, "sum": 1800}
    assert (body["unit"], body["window_ms"], body["topic"]) == ("records", MINUTE, "orders")
    _, p99 = get(
        f"{gateway}/v2/topic-metrics/primary/backup/orders/replication-latency-ms-p99?{RANGE}"
    )
    assert [p["value"] for p in p99["series"]] == [50, 5], "bucket upper bounds"
    _, rate = get(f"{gateway}/{ORDERS}/record-rate?{RANGE}")
    assert [p["value"] for p in rate["series"]] == [10.0, 20.0]
    _, last = get(
        f"{gateway}/v2/topic-metrics/primary/backup/orders/record-count?{RANGE}&samples=1"
    )
    assert [p["value"] for p in last["series"]] == [1200]


def test_a_remote_topic_is_found_through_the_mappings(gateway: str) -> None:
    status, body = get(f"{gateway}/v2/topic-metrics/backup/primary.orders/record-count?{RANGE}")
    assert status == 200 and body["aggregate"]["sum"] == 1800 and body["topic"] == "orders"
    status, body = get(f"{gateway}/v2/topic-metrics/backup/nothing.here/record-count")
    assert status == 404 and "no replication into 'backup'" in body["error"]


def test_the_identity_policy_is_resolved_by_the_mapping_too() -> None:
    store = MetricStore()
    store.add(TopicMapping("d/a/1", T0, 0, FLOW, topic="orders", remote_topic="orders"), "b")
    assert store.upstream([FLOW], "orders") == (FLOW, "orders")
    assert store.upstream(["backup->primary"], "orders") is None


def test_unknown_metrics_names_and_bad_ranges_are_4xx(gateway: str) -> None:
    status, body = get(f"{gateway}/v2/topic-metrics/primary/backup/orders/temperature")
    assert (
        status == 404
        and "unknown metric 'temperature'; known: replication-latency-ms" in body["error"]
    )
    status, body = get(f"{gateway}/v2/cluster-metrics/backup/byte-rate?minutes=5&hours=1")
    assert status == 400 and "minutes or hours" in body["error"]
    status, body = get(f"{gateway}/v2/cluster-metrics/backup/byte-rate?from={T0}&to={T0}")
    assert status == 400 and "from: must be before to" in body["error"]
    status, body = get(f"{gateway}/v2/cluster-metrics/east/byte-rate")
    assert status == 404


def test_freshness_against_the_objective(gateway: str) -> None:
    status, body = get(f"{gateway}/v1/freshness")
    flows = {(r["source"], r["target"]): r for r in body["replications"]}
    assert flows[("primary", "backup")]["met"] is True
    assert flows[("primary", "backup")]["lag_ms"] == 900
    assert flows[("backup", "primary")]["met"] is None, "nothing measured"


def test_a_prometheus_scrape_parses(gateway: str) -> None:
    import urllib.request

    with urllib.request.urlopen(f"{gateway}/metrics", timeout=10) as response:
        text = response.read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    rate = families["srm_records_per_second"]
    by_level = {s.labels["level"]: s.value for s in rate.samples}
    assert by_level == {"flow": 20.0, "topic": 20.0}, "the newest window of each"
    assert families["srm_replication_lag_ms"].samples[0].value == 900


def test_old_windows_are_dropped_as_new_ones_arrive() -> None:
    store = MetricStore()
    subject = {"flow": FLOW, "topic": "orders"}
    store.add(window("topic", subject, T0, 1, [1]), "b")
    store.add(window("topic", subject, T0, 7, [1]), "b")
    assert store.latest("topic", subject, MINUTE).figures.records == 7, "the latest record wins"
    later = T0 + 7 * HOUR
    store.add(window("topic", subject, later, 2, [1]), "b")
    assert [w.start_ms for w in store.windows("topic", subject, MINUTE, 0, later + MINUTE)] == [
        later
    ]


def test_a_bad_freshness_objective_is_one_line_naming_the_key(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from srm_api_gateway.cli import main
    from srm_api_gateway.testing import CONFIG

    path = tmp_path / "srm.yaml"
    path.write_text(
        CONFIG.replace("  tasks.max: 2\n", "  tasks.max: 2\n  srm.freshness.objective.ms: soon\n")
    )
    assert main(["--config", str(path), "--port", "0", "--state-dir", str(tmp_path)]) == 2
