"""A managed group of drivers: kill -9 one, add one, and still copy exactly once.

One coordinator and three ``srm-driver`` processes (each with its own Spark) replicate
a 12-partition topic under a steady load. d4 joins: only a quarter of the tasks move,
and the tasks that stay never stop. Then d1 is killed with SIGKILL: after the session
timeout its tasks move to the other three. At the end every partition and its
remote twin hold the same records in the same order.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from srm_common.adapters.event_log_reads import read_log
from srm_common.control.events import AssignmentChanged
from srm_common.control.task_ids import parse_task_id
from srm_harness.clients import SteadyProducer, consume_all, end_offsets
from srm_harness.compare import content, count_copy
from srm_harness.control import ControlGroup, get_json, write_config
from srm_harness.processes import CoordinatorProcess, DriverProcess, log_tails
from srm_harness.waits import wait_caught_up, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 12
SESSION_MS = 8000
# The copy producer's delivery timeout: shorter than the default 10 s, the same rules. The
# leader waits it out (with d1's lease and max.block) before d1's tasks move: 10.2 s, not
# 16.3 s (ControlSettings.wait_out_ms).
WRITE_TIMEOUT_MS = 4000


def test_drivers_share_fail_over_and_rebalance_incrementally(kafka, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    topic = kafka.create_topic("primary", unique_name("group"), partitions=PARTITIONS)
    remote = f"primary.{topic}"
    kafka.created.append(("backup", remote))
    # One consumer group of the source that the flow replicates: the group has a
    # checkpoint task, so every kind of task (source, checkpoint, heartbeat) is held by
    # some driver, and other tests' groups on the shared cluster do not count.
    group = unique_name("app")
    consumer = Consumer({"bootstrap.servers": kafka["primary"], "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    consumer.close()
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {
                "enabled": True,
                "topics": [topic],
                "groups": [group],
                "srm.batch.max.records": 400,
            },
            "backup->primary": {"enabled": False},
        },
        replication={
            "tasks.max": PARTITIONS,
            "srm.control.topic.prefix": unique_name("grp"),
            "srm.driver.session.timeout.ms": SESSION_MS,
            "srm.driver.write.timeout.ms": WRITE_TIMEOUT_MS,
        },
    )
    drivers_group = ControlGroup(config)
    settings = drivers_group.settings
    state, settled = drivers_group.state, drivers_group.settled

    coordinator = CoordinatorProcess(
        config, tmp_path / "coordinator.log", "c1", "--projection", "none"
    )
    drivers = {
        name: DriverProcess(
            config, tmp_path / f"{name}.log", spark_master="local[1]", args=["--id", name]
        )
        for name in ("d1", "d2", "d3", "d4")
    }
    producer = SteadyProducer(kafka["primary"], topic, PARTITIONS)

    logs = log_tails(lambda: (coordinator, *drivers.values()), 1500)

    try:
        coordinator.start()
        for name in ("d1", "d2", "d3"):
            drivers[name].start()
        producer.start()
        three = ["d1", "d2", "d3"]
        wait_until(lambda: settled(three), 240, "3 drivers run", detail=logs)
        wait_until(
            lambda: sum(end_offsets(kafka["backup"], remote).values()) > 2000,
            120,
            "copying",
            detail=logs,
        )
        # The starting point is a balanced group: every task assigned and each of the three
        # drivers holding some. A snapshot taken while the group still gives a late member
        # its share (incremental rebalancing: tasks unassigned for a generation) would count
        # those tasks as never owned, and d4 taking one of them as a move nobody made.
        start: list[object] = []

        def balanced() -> bool:
            if not settled(three):
                return False
            current = state()
            held = set(current.assignment) == set(current.all_task_ids())
            if held and all(current.tasks_of(d) for d in three):
                start.append(current)
                return True
            return False

        wait_until(balanced, 240, "3 drivers each hold tasks", detail=logs)
        before = start[-1]  # type: ignore[assignment]
        counts = {d: len(before.tasks_of(d)) for d in ("d1", "d2", "d3")}
        print(f"3 drivers: tasks per driver {counts} of {len(before.all_task_ids())}")
        # The flow: 12 source tasks, one checkpoint task (one group), one heartbeat task
        # (the disabled backup->primary has a heartbeat task too, as in MM2).
        kinds = sorted(
            parse_task_id(t)[1] for t in before.all_task_ids() if t.startswith("primary->backup|")
        )
        assert kinds == ["checkpoint", "heartbeat"] + ["source"] * PARTITIONS

        # d4 joins: only what must move moves; the tasks that stay never stop.
        status_before = {
            d: get_json(f"{before.drivers[d].url}/v1/flows/primary/backup/status")
            for d in ("d1", "d2", "d3")
        }
        generation_before = before.generation
        drivers["d4"].start()
        wait_until(
            lambda: (
                "d4" in state().drivers
                and settled(["d1", "d2", "d3", "d4"])
                and bool(state().tasks_of("d4"))
            ),
            240,
            "d4 joins",
            detail=logs,
        )
        after_join = state()
        moved = {
            task
            for task, owner in before.assignment.items()
            if after_join.assignment.get(task) != owner
        }
        revoked = [
            e.event
            for e in read_log(settings)
            if isinstance(e.event, AssignmentChanged) and e.event.generation > generation_before
        ]
        total = len(after_join.all_task_ids())
        print(
            f"d4 joins: {len(moved)} of {total} tasks moved ({len(moved) / total:.0%}) in"
            f" {len(revoked)} assignment generations; per driver"
            f" { {d: len(after_join.tasks_of(d)) for d in ('d1', 'd2', 'd3', 'd4')} }"
        )
        assert set(after_join.tasks_of("d4")) == moved
        # The fewest moves that balance the group: d4's share, nothing else.
        assert len(moved) in (total // 4, -(-total // 4))
        for d in ("d1", "d2", "d3"):
            now = get_json(f"{after_join.drivers[d].url}/v1/flows/primary/backup/status")
            kept = {
                t["id"]: t["since_ms"] for t in status_before[d]["tasks"] if t["id"] not in moved
            }
            still = {t["id"]: t["since_ms"] for t in now["tasks"] if t["id"] in kept}
            assert still == kept, f"{d}: a task that did not move was restarted"
            records = (status_before[d]["copy"]["records"], now["copy"]["records"])
            print(f"{d}: kept {len(kept)} tasks running since before the join; records {records}")
            assert records[1] > records[0]

        # kill -9 d1: after the session timeout its tasks move to the other three.
        orphaned = set(after_join.tasks_of("d1"))
        killed = time.monotonic()
        drivers["d1"].kill9()
        wait_until(
            lambda: settled(["d2", "d3", "d4"]), 120, "d1's tasks move", detail=logs, step=0.25
        )
        took = time.monotonic() - killed
        after_kill = state()
        print(
            f"kill -9 d1: its {len(orphaned)} tasks run on d2, d3 and d4 {took:.1f} s later"
            f" (session timeout {SESSION_MS / 1000:.0f} s, then d1's lease and write timeout"
            f" waited out: {settings.wait_out_ms / 1000:.1f} s)"
        )
        assert "d1" not in after_kill.drivers

        producer.finish()
        wait_caught_up(kafka["primary"], topic, kafka["backup"], remote, 240, detail=logs)
        for name in ("d2", "d3", "d4"):
            assert drivers[name].stop() == 0
    finally:
        producer.stop.set()
        for process in (*drivers.values(), coordinator):
            if process.alive():
                process.kill9()

    source = consume_all(kafka["primary"], topic)
    target = consume_all(kafka["backup"], remote)
    count = count_copy(source, target)
    print(count)
    assert count.produced == producer.sent
    assert (count.missing, count.duplicated) == (0, 0)
    for partition in range(PARTITIONS):
        assert content(target[partition]) == content(source[partition])
