"""The metrics aggregator on real clusters, as processes: exactly N records produced in
raw samples (version 1, and grouped version 2 records as drivers write them; some
delivered twice, one garbage record among them) add up to exactly N over the closed
windows, also when an instance is killed -9 mid-run and restarted, and when two
instances share the raw partitions.

The raw, aggregated and dead-letter topics are shared by every test of the session: each
test has its own Faust app id, flow and target cluster name (a flow only needs
``source->target``), and counts only those.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from srm_common.config import load_config
from srm_common.metrics import aggregate
from srm_common.metrics.aggregate import AGGREGATED_TOPIC, DEAD_TOPIC, REASON_HEADER, Aggregate
from srm_common.metrics.grouping import grouped
from srm_common.metrics.raw import RAW_TOPIC, Histogram, PartitionSample, encode
from srm_harness.clients import consume_all, end_offsets, produce
from srm_harness.control import write_config
from srm_harness.processes import ChildProcess, log_tails
from srm_harness.records import Record
from srm_harness.waits import wait_until
from srm_metrics_aggregator.bootstrap import prepare
from srm_metrics_aggregator.settings import aggregator_settings

pytestmark = pytest.mark.integration

WINDOW_MS = 2000  # and LONG_MS: the two window sizes of these tests
LONG_MS = 10_000
GRACE_MS = 1000


@dataclass
class Scenario:
    """One test's flow, its samples and its aggregator processes."""

    bootstrap: str
    config: Path
    folder: Path
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    processes: list[ChildProcess] = field(default_factory=list)
    seq: int = 0
    produced: int = 0  # records in distinct samples

    @property
    def flow(self) -> str:
        return f"src{self.token}->dst{self.token}"

    @property
    def app_id(self) -> str:
        return f"agg-test-{self.token}"

    def aggregator(self, name: str) -> ChildProcess:
        process = ChildProcess(
            "srm_metrics_aggregator",
            [
                "--config", str(self.config),
                "--cluster", "backup",
                "--data-dir", str(self.folder / name),
                "--set", f"srm.metrics.aggregator.id={self.app_id}",
                "--set", f"srm.metrics.windows={WINDOW_MS}ms,{LONG_MS}ms",
                "--set", f"srm.metrics.grace.ms={GRACE_MS}",
                "--set", "srm.metrics.update.ms=500",
            ],
            self.folder / f"{name}.log",
        )  # fmt: skip
        self.processes.append(process)
        process.start()
        return process

    def samples(
        self, count: int, *, partitions: int = 4, at_once: bool = False
    ) -> list[PartitionSample]:
        """``count`` new samples over ``partitions`` partitions of two topics, ending now
        (5 ms apart: samples of other tests' drivers, at their now, must not make them
        late; ``at_once``: all at now, one interval of a driver, to be grouped)."""
        now = int(time.time() * 1000)
        made = []
        for i in range(count):
            self.seq += 1
            records = 1 + (self.seq * 7) % 40
            made.append(
                PartitionSample(
                    id=f"test/{self.token}/{self.seq}",
                    at_ms=now if at_once else now - (count - i) * 5,
                    interval_ms=5,
                    flow=self.flow,
                    topic=("orders", "payments")[i % 2],
                    partition=i % partitions,
                    remote_topic="x",
                    records=records,
                    bytes=records * 10,
                    latency=Histogram.of([5] * records),
                    latency_sum_ms=5 * records,
                    latency_min_ms=5,
                    latency_max_ms=5,
                    lag_records=0,
                    lag_ms=0,
                )
            )
            self.produced += records
        return made

    def produce(self, samples: list[PartitionSample]) -> None:
        produce(self.bootstrap, RAW_TOPIC, [Record(s.key(), encode(s)) for s in samples])

    def grouped(self, samples: list[PartitionSample]) -> list[Record]:
        """``samples`` as a driver writes them: version 2 groups, each on the raw
        partition its members' keys go to (small groups here: several per partition)."""
        count = len(end_offsets(self.bootstrap, RAW_TOPIC))
        return [
            Record(group.key(), encode(group), partition=partition)
            for partition, group in grouped(samples, count, max_bytes=2_000)
        ]

    def close_windows(self) -> None:
        """Once the clock passed the end of the long window of everything produced (plus
        the grace), a sample with no records on every raw partition: every window of this
        test closes. (Not a sample in the future: the next test's would be late.)"""
        raw_partitions = end_offsets(self.bootstrap, RAW_TOPIC)
        at_ms = (int(time.time() * 1000) // LONG_MS + 1) * LONG_MS + GRACE_MS
        time.sleep(max(0.0, at_ms / 1000 - time.time()))
        ticks = []
        for p in sorted(raw_partitions):
            self.seq += 1
            tick = PartitionSample(
                id=f"test/{self.token}/{self.seq}", at_ms=at_ms, interval_ms=1,
                flow=self.flow, topic="tick", partition=p,
            )  # fmt: skip
            ticks.append(Record(tick.key(), encode(tick), partition=p))
        produce(self.bootstrap, RAW_TOPIC, ticks)

    def windows(self) -> list[Aggregate]:
        """This test's windows on the aggregated topic (latest record of each key)."""
        latest: dict[bytes | None, bytes | None] = {}
        for records in consume_all(self.bootstrap, AGGREGATED_TOPIC).values():
            for record in records:
                latest[record.key] = record.value
        found = []
        for value in latest.values():
            window = aggregate.read(value)
            if not isinstance(window, Aggregate):
                continue
            if window.subject.get("flow") == self.flow or window.subject.get("cluster") == (
                f"dst{self.token}"
            ):
                found.append(window)
        return found

    def closed_sums(self) -> dict[tuple[str, int], int]:
        """Records summed over the closed windows, by level and window size."""
        sums: dict[tuple[str, int], int] = {}
        for window in self.windows():
            if window.closed and window.subject.get("topic") != "tick":
                key = (window.level, window.window_ms)
                sums[key] = sums.get(key, 0) + window.figures.records
        return sums

    def exact(self) -> bool:
        sums = self.closed_sums()
        levels = [(level, size) for level in ("partition", "topic", "flow", "cluster")
                  for size in (WINDOW_MS, LONG_MS)]  # fmt: skip
        return all(sums.get(key) == self.produced for key in levels)

    def details(self) -> str:
        dead = [
            dict(record.headers).get(REASON_HEADER, b"").decode()[:200]
            for records in consume_all(self.bootstrap, DEAD_TOPIC).values()
            for record in records
            if self.token.encode() in (record.value or b"")
        ]
        partitions = sorted(
            (w.subject["topic"], w.subject["partition"], w.start_ms, w.closed, w.figures.records)
            for w in self.windows()
            if w.level == "partition" and w.window_ms == LONG_MS
        )
        return (
            f"sums {self.closed_sums()} != {self.produced}\ndead letters {dead}\n"
            f"long partition windows {partitions}\n" + log_tails(self.processes)()
        )


@pytest.fixture
def scenario(kafka, tmp_path) -> Iterator[Scenario]:  # type: ignore[no-untyped-def]
    config = write_config(tmp_path, {"primary": kafka["primary"], "backup": kafka["backup"]})
    prepare(aggregator_settings(load_config(config), "backup"))
    made = Scenario(kafka["backup"], config, tmp_path)
    yield made
    for process in made.processes:
        if process.alive():
            process.stop(30)


def _assigned(process: ChildProcess, *, since_start: bool = False) -> list[str]:
    """The raw partitions of each assignment the process logged, in order (since its
    last start)."""
    text = process.log_text()
    if since_start:
        text = text.rsplit("--- start ", 1)[-1]
    return [
        line.split("assigned raw partitions ", 1)[1].split(" of ", 1)[0]
        for line in text.splitlines()
        if "assigned raw partitions" in line
    ]


def _wait_assigned(process: ChildProcess, timeout: float = 90) -> None:
    """Until the process's last start logged raw partitions assigned to it."""
    wait_until(
        lambda: any(p != "[]" for p in _assigned(process, since_start=True)),
        timeout,
        f"{process.log_path.name} assigned raw partitions",
        detail=log_tails([process]),
    )


def test_exactly_n_records_with_duplicates_garbage_and_a_kill_9(scenario: Scenario) -> None:
    first = scenario.aggregator("a")
    _wait_assigned(first)
    batch = scenario.samples(60)
    scenario.produce(batch)
    scenario.produce(batch[:10])  # delivered twice
    garbage_key = f"garbage-{scenario.token}".encode()
    produce(scenario.bootstrap, RAW_TOPIC, [Record(garbage_key, b'{"v":1,"kind":"x"}')])
    wait_until(
        lambda: any(w.level == "cluster" for w in scenario.windows()),
        60,
        "the first aggregates",
        detail=log_tails([first]),
    )
    # Two intervals of a driver as grouped records (version 2), beside the version 1
    # samples before and after.
    more = scenario.grouped(scenario.samples(60, partitions=60, at_once=True))
    more += scenario.grouped(scenario.samples(60, partitions=60, at_once=True))
    half = len(more) // 2
    produce(scenario.bootstrap, RAW_TOPIC, more[:half])
    first.kill9()  # mid-run: samples read, folded, maybe not committed
    produce(scenario.bootstrap, RAW_TOPIC, more[half:])
    produce(scenario.bootstrap, RAW_TOPIC, more[half - 3 : half + 3])  # again
    first.start()
    _wait_assigned(first)
    scenario.produce(scenario.samples(40))
    scenario.close_windows()
    wait_until(scenario.exact, 120, "closed windows add up to N", detail=scenario.details)
    print(f"N = {scenario.produced}: closed sums {scenario.closed_sums()} after a kill -9")

    dead = [
        record
        for records in consume_all(scenario.bootstrap, DEAD_TOPIC).values()
        for record in records
        if record.key == garbage_key
    ]
    assert len(dead) == 1, dead
    reason = dict(dead[0].headers)[REASON_HEADER].decode()
    assert reason == "unknown kind 'x'; known: flow, group, partition, partitions, topic-mapping"
    assert dead[0].value == b'{"v":1,"kind":"x"}'


def test_two_instances_share_the_partitions_and_add_up_the_same(scenario: Scenario) -> None:
    """Also when one of them is killed -9 and comes back."""
    one, two = scenario.aggregator("one"), scenario.aggregator("two")
    _wait_assigned(one)
    _wait_assigned(two)
    for round_ in range(3):
        batch = scenario.samples(50, partitions=8)
        scenario.produce(batch)
        scenario.produce(batch[::7])
        time.sleep(1)
        if round_ == 0:
            two.kill9()  # its partitions move to `one` (standby copies), then come back
        if round_ == 1:
            time.sleep(12)  # past the session timeout: `one` holds everything
            two.start()
    _wait_assigned(two)
    scenario.close_windows()
    wait_until(scenario.exact, 120, "closed windows add up to N", detail=scenario.details)
    shares = [_assigned(one)[-1], _assigned(two)[-1]]
    assert all(share != "[]" for share in shares), shares
    print(f"N = {scenario.produced}: closed sums {scenario.closed_sums()}; raw partitions {shares}")
