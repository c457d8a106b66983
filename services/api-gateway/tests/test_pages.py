"""A replication of 10,000 partitions through the gateway's API: bounded answers (pages
of topics and partitions, the worst first, counts of the whole, a bounded list of halted
partitions), small answers unchanged for a small flow, and how long each took (printed,
never asserted: the machine is shared)."""

from __future__ import annotations

import time

import pytest
from srm_api_gateway.metric_store import MINUTE, MetricStore
from srm_api_gateway.testing import FLOW, big_history, get, served
from srm_common.config.model import SrmConfig
from srm_common.metrics.aggregate import Aggregate, Figures

TOPICS, PER_TOPIC = 1000, 10
START = 1_700_000_040_000


def lag_of(topic: int, partition: int) -> int:
    """A lag for each partition: mostly 0, a few large (the worst: t00997-9, 99,790)."""
    return (topic * 100 + partition * 10) if (topic % 97 == 0 or topic > 990) else 0


@pytest.fixture(scope="module")
def store() -> MetricStore:
    store = MetricStore()
    for t in range(TOPICS):
        topic = f"t{t:05d}"
        total = 0
        for p in range(PER_TOPIC):
            lag = lag_of(t, p)
            total += lag
            for start in (START - MINUTE, START):
                figures = Figures(samples=6, records=60, partitions=1, lag_records=lag, lag_ms=lag)
                subject = {"flow": FLOW, "topic": topic, "partition": p}
                store.add(Aggregate("partition", MINUTE, start, subject, False, figures), "backup")
        figures = Figures(records=600, partitions=PER_TOPIC, lag_records=total, lag_ms=total)
        subject = {"flow": FLOW, "topic": topic}
        store.add(Aggregate("topic", MINUTE, START, subject, False, figures), "backup")
    return store


def timed(url: str) -> tuple[int, dict, float]:  # type: ignore[type-arg]
    started = time.perf_counter()
    status, body = get(url)
    return status, body, time.perf_counter() - started


def test_ten_thousand_partitions_answer_a_page_at_a_time_the_worst_first(
    config: SrmConfig, store: MetricStore
) -> None:
    log = big_history(TOPICS, PER_TOPIC, halted=250)
    with served(config, store, envelopes=log) as gateway:
        status, listed, listed_s = timed(f"{gateway}/v2/replications")
        assert status == 200
        (flow,) = [r for r in listed["replications"] if r["source"] == "primary"]
        assert (flow["topics"], flow["partitions"], flow["status"]) == (1000, 10_000, "halted")
        assert (len(flow["halted"]), flow["halted_count"]) == (100, 250), "bounded, counted"

        status, worst, worst_s = timed(
            f"{gateway}/v2/replications/primary/backup/partitions?limit=5"
        )
        assert status == 200
        assert [(p["topic"], p["partition"], p["lag_records"]) for p in worst["partitions"]] == [
            ("t00999", 9, 99_990),
            ("t00999", 8, 99_980),
            ("t00999", 7, 99_970),
            ("t00999", 6, 99_960),
            ("t00999", 5, 99_950),
        ]
        counts = worst["counts"]
        assert (counts["partitions"], counts["measured"], counts["halted"]) == (10_000, 10_000, 250)
        assert counts["lagging"] == sum(
            1 for t in range(TOPICS) for p in range(PER_TOPIC) if lag_of(t, p)
        )
        assert (worst["total"], worst["next_offset"]) == (10_000, 5)

        seen = []
        offset: int | None = 0
        while offset is not None:
            _, body = get(
                f"{gateway}/v2/replications/primary/backup/partitions?sort=name&limit=4000&offset={offset}"
            )
            seen += [(p["topic"], p["partition"]) for p in body["partitions"]]
            offset = body["next_offset"]
        assert len(seen) == len(set(seen)) == 10_000 and seen == sorted(seen)

        _, one_topic = get(f"{gateway}/v2/replications/primary/backup/partitions?topic=t00000")
        assert sorted(p["partition"] for p in one_topic["partitions"] if p["halted"]) == list(
            range(10)
        )

        status, topics, topics_s = timed(
            f"{gateway}/v2/replications/primary/backup/topics?sort=lag&limit=3"
        )
        assert [t["topic"] for t in topics["topics"]] == ["t00999", "t00998", "t00997"]
        assert (topics["total"], topics["next_offset"]) == (1000, 3)
        _, default = get(f"{gateway}/v2/replications/primary/backup/topics")
        assert len(default["topics"]) == 1000 and default["next_offset"] is None

        status, bad, _ = timed(f"{gateway}/v2/replications/primary/backup/partitions?limit=0")
        assert status == 400 and "limit" in bad["error"]
    print(
        f"\n10,000 partitions: /v2/replications {listed_s * 1000:.0f} ms,"
        f" partitions worst 5 {worst_s * 1000:.0f} ms, topics worst 3 {topics_s * 1000:.0f} ms"
    )


def test_a_small_flow_still_lists_every_topic_in_one_answer(config: SrmConfig) -> None:
    with served(config, MetricStore()) as gateway:
        _, body = get(f"{gateway}/v2/replications/primary/backup/topics")
        assert [t["topic"] for t in body["topics"]] == ["orders", "payments"]
        assert body["topics"][0]["remote_topic"] == "primary.orders"
        assert body["topics"][0]["lag_records"] is None, "not measured yet"
        assert (body["total"], body["next_offset"]) == (2, None)
        _, flows = get(f"{gateway}/v2/replications/primary/backup")
        assert flows["halted_count"] == len(flows["halted"]) == 1
        _, parts = get(f"{gateway}/v2/replications/primary/backup/partitions")
        assert parts["counts"]["partitions"] == 3 and parts["counts"]["measured"] == 0
        assert [p["halted"] for p in parts["partitions"]].count(True) == 1
