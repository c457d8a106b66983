"""One cluster down stops only its own flows (static stability), on real clusters.

Three clusters a, b, c with flows a->b and b->c, and the control cluster on ``a``: the
worst place for it. ``a``'s broker is killed with SIGKILL while records flow on both;
b->c keeps copying from the fences on ``c`` (no event log, no coordinator reachable),
and when ``a`` comes back, a->b resumes. Both copies are compared in full: nothing lost,
nothing doubled, nothing halted.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from srm_common.control.events import DriverLeft
from srm_local import testing
from srm_local.clusters import ClusterSpec, LocalKafkaCluster, free_port_pair

pytestmark = pytest.mark.integration

PARTITIONS = 2
TIMINGS = {"srm.driver.session.timeout.ms": 6000, "srm.driver.write.timeout.ms": 4000}
OUTAGE_S = 40.0


def _exact(source: str, topic: str, target: str, remote: str, sent: int) -> testing.CopyCount:
    source_records = testing.consume_all(source, topic)
    target_records = testing.consume_all(target, remote)
    count = testing.count_copy(source_records, target_records)
    assert count.produced == sent
    assert (count.missing, count.duplicated) == (0, 0), str(count)
    for partition in range(PARTITIONS):
        assert testing.content(target_records[partition]) == testing.content(
            source_records[partition]
        )
    return count


def _copied(target: str, remote: str) -> int:
    return sum(testing.end_offsets(target, remote).values())


def test_killing_the_control_cluster_stops_only_the_flows_that_touch_it(
    kafka, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    a = LocalKafkaCluster(ClusterSpec("a", free_port_pair()), tmp_path / "kafka-a")
    a.start(fresh=True)
    try:
        _run(a, kafka, tmp_path, unique_name)
    finally:
        a.stop()


def _run(a: LocalKafkaCluster, kafka, tmp_path, unique_name) -> None:  # type: ignore[no-untyped-def]
    b, c = kafka["primary"], kafka["backup"]
    from_a = unique_name("from-a")
    from_b = kafka.create_topic("primary", unique_name("from-b"), partitions=PARTITIONS)
    testing.create_topic(a.bootstrap_servers, from_a, partitions=PARTITIONS)
    kafka.created += [("primary", f"a.{from_a}"), ("backup", f"b.{from_b}")]
    config = testing.write_config(
        tmp_path,
        {"a": a.bootstrap_servers, "b": b, "c": c},
        flows={
            "a->b": {"enabled": True, "topics": [from_a], "groups": []},
            "b->c": {"enabled": True, "topics": [from_b], "groups": []},
        },
        replication={
            "tasks.max": PARTITIONS,
            "srm.control.cluster": "a",
            "srm.control.topic.prefix": unique_name("ctl"),
            **TIMINGS,
        },
    )
    group = testing.ControlGroup(config)
    coordinator = testing.CoordinatorProcess(
        config, tmp_path / "coordinator.log", "c1", "--projection", "none"
    )
    driver = testing.DriverProcess(
        config, tmp_path / "driver.log", spark_master="local[2]", args=["--id", "d1"]
    )
    logs = testing.log_tails((coordinator, driver), 3000)
    into_a = testing.SteadyProducer(a.bootstrap_servers, from_a, PARTITIONS)
    into_b = testing.SteadyProducer(b, from_b, PARTITIONS)

    def admitted_on(cluster: str) -> bool:
        url = group.state().drivers["d1"].url
        fences = testing.get_json(f"{url}/v1/driver", timeout=3)["control_log"]["fences"]
        return bool(fences[cluster]["admits_this_driver"])

    try:
        coordinator.start()
        driver.start()
        into_a.start()
        into_b.start()
        testing.wait_until(lambda: group.settled(["d1"]), 240, "d1 runs every task", detail=logs)
        testing.wait_until(
            lambda: admitted_on("b") and admitted_on("c"),
            60,
            "the fences on b and c admit d1",
            detail=logs,
        )
        testing.wait_until(
            lambda: _copied(c, f"b.{from_b}") > 0 and _copied(b, f"a.{from_a}") > 0,
            120,
            "both flows copy",
            detail=logs,
        )

        # a dies: its producer stops with it (what it sent and a acknowledged is kept).
        into_a.stop.set()
        into_a.join(60)
        a_pid = a.pid()
        assert a_pid is not None
        os.kill(a_pid, signal.SIGKILL)
        killed = time.monotonic()
        # Longer than the lease, the session and the wait-out together.
        time.sleep(10)
        before = _copied(c, f"b.{from_b}")
        time.sleep(OUTAGE_S - 10)
        during = _copied(c, f"b.{from_b}") - before
        outage = time.monotonic() - killed
        assert during > 0, "b->c stopped while a was down\n" + logs()

        a.start()
        back = time.monotonic()
        more = 500
        testing.produce(
            a.bootstrap_servers,
            from_a,
            [
                testing.Record(f"after-{n}".encode(), f"after the outage {n}".encode())
                for n in range(more)
            ],
        )
        into_b.finish()
        testing.wait_caught_up(a.bootstrap_servers, from_a, b, f"a.{from_a}", 240, detail=logs)
        resumed = time.monotonic() - back
        testing.wait_caught_up(b, from_b, c, f"b.{from_b}", 120, detail=logs)
        # A coordinator leads again, and keeps the driver that copied through the outage.
        testing.wait_until(
            lambda: group.state().leader.epoch >= 2, 180, "a leader again", detail=logs
        )
        leads_again = time.monotonic() - back
        time.sleep(5)
        assert driver.stop() == 0
    finally:
        into_a.stop.set()
        into_b.stop.set()
        for process in (driver, coordinator):
            if process.alive():
                process.kill9()
    state = group.state()
    assert not state.halts, f"partitions halted: {state.halts}"
    left = [e.reason for e in group.events() if isinstance(e, DriverLeft)]
    assert left == ["stopped and left the group"], "removed only when it stopped"
    a_to_b = _exact(a.bootstrap_servers, from_a, b, f"a.{from_a}", into_a.sent + more)
    b_to_c = _exact(b, from_b, c, f"b.{from_b}", into_b.sent)
    print(
        f"\ncontrol cluster a killed for {outage:.0f} s: b->c copied {during} records in the"
        f" last {OUTAGE_S - 10:.0f} s of it; a->b caught up {resumed:.1f} s after a restarted,"
        f" a leader again after {leads_again:.1f} s;"
        f" a->b {a_to_b}; b->c {b_to_c}"
    )
