"""Faults that are not clean crashes: a paused driver (a zombie), a second process under a
driver's id, a record the target refuses, topics deleted or recreated under load.

Each ends with a full content comparison of source and target, or with the partition
halted and its reason on the flow's status: never silent damage.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from srm_common.control.events import DriverJoined, DriverLeft
from srm_common.errors import ControlLogError
from srm_harness.clients import (
    SteadyProducer,
    consume_all,
    create_topic,
    delete_topics,
    end_offsets,
    produce,
)
from srm_harness.compare import CopyCount, content, copied, count_copy
from srm_harness.control import ControlGroup, get_json, write_config
from srm_harness.processes import CoordinatorProcess, DriverProcess, log_tails
from srm_harness.records import Record
from srm_harness.waits import wait_caught_up, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 4
# Shorter than the defaults so that a test waits less; the same rules apply. A driver gone
# silent is noticed after the session timeout (4 s), and its tasks move once the leader
# waited out its lease (session / 2), max.block and write timeout: 6.9 s
# (ControlSettings.wait_out_ms). With 6 s and 4 s (9.2 s of wait-out) each of the paused
# test's rounds took ~5 s longer.
TIMINGS = {"srm.driver.session.timeout.ms": 4000, "srm.driver.write.timeout.ms": 3000}


def _group_config(kafka, tmp_path, unique_name, topic: str):  # type: ignore[no-untyped-def]
    return write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {"enabled": True, "topics": [topic], "groups": []},
            "backup->primary": {"enabled": False},
        },
        replication={
            "tasks.max": PARTITIONS,
            "srm.control.topic.prefix": unique_name("ctl"),
            **TIMINGS,
        },
    )


def _assert_exact_copy(kafka, topic: str, remote: str, sent: int) -> CopyCount:  # type: ignore[no-untyped-def]
    source = consume_all(kafka["primary"], topic)
    target = consume_all(kafka["backup"], remote)
    count = count_copy(source, target)
    assert count.produced == sent
    assert (count.missing, count.duplicated) == (0, 0), str(count)
    for partition in range(PARTITIONS):
        assert content(target[partition]) == content(source[partition])
    return count


def test_a_paused_driver_whose_tasks_moved_writes_nothing_when_it_wakes(
    kafka, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    """kill -STOP a driver's process group (Python and its Spark JVM) for longer than the
    session timeout, let its tasks move to the other driver, then kill -CONT: five times,
    under a steady numbered load, once for 40 s (a frozen VM). Nothing lost, nothing
    doubled, nothing halted."""
    topic = kafka.create_topic("primary", unique_name("zombie"), partitions=PARTITIONS)
    remote = f"primary.{topic}"
    kafka.created.append(("backup", remote))
    config = _group_config(kafka, tmp_path, unique_name, topic)
    group = ControlGroup(config)
    coordinator = CoordinatorProcess(
        config, tmp_path / "coordinator.log", "c1", "--projection", "none"
    )
    drivers = {
        name: DriverProcess(
            config, tmp_path / f"{name}.log", spark_master="local[1]", args=["--id", name]
        )
        for name in ("d1", "d2")
    }
    producer = SteadyProducer(kafka["primary"], topic, PARTITIONS)

    logs = log_tails(lambda: (coordinator, *drivers.values()), 2000)

    def source_tasks(state, driver: str) -> int:  # type: ignore[no-untyped-def]
        return sum("MirrorSourceConnector" in t for t in state.tasks_of(driver))

    pauses: list[str] = []
    try:
        coordinator.start()
        for process in drivers.values():
            process.start()
        producer.start()
        wait_until(lambda: group.settled(drivers), 240, "2 drivers run", detail=logs)
        last = None
        for round_ in range(5):
            state = group.state()
            # Each driver in turn, as long as it copies something.
            victim = max(drivers, key=lambda d: (source_tasks(state, d) > 0, d != last, d))
            other = next(d for d in drivers if d != victim)
            last = victim
            assert source_tasks(state, victim), "the victim copies something"
            os.killpg(drivers[victim].process.pid, signal.SIGSTOP)  # type: ignore[union-attr]
            paused = time.monotonic()
            wait_until(
                lambda other=other: group.settled([other]),
                120,
                f"pause {round_ + 1}: {victim}'s tasks move to {other}",
                detail=logs,
            )
            moved_after = time.monotonic() - paused
            # The other driver copies a while before the zombie wakes; once 40 s in all.
            time.sleep(max(2.0, 40 - moved_after) if round_ == 1 else 2.0)
            os.killpg(drivers[victim].process.pid, signal.SIGCONT)  # type: ignore[union-attr]
            paused_for = time.monotonic() - paused

            def rejoined() -> bool:
                try:
                    state = group.state()
                except ControlLogError:
                    return False
                return group.settled(drivers, state) and all(
                    source_tasks(state, d) for d in drivers
                )

            wait_until(
                rejoined,
                180,
                f"pause {round_ + 1}: {victim} rejoins and gets work again",
                detail=logs,
            )
            pauses.append(
                f"{victim} paused {paused_for:.0f} s, its tasks ran on {other}"
                f" {moved_after:.1f} s after the pause"
            )
        producer.finish()
        wait_caught_up(kafka["primary"], topic, kafka["backup"], remote, 180, detail=logs)
        for process in drivers.values():
            assert process.stop() == 0
    finally:
        producer.stop.set()
        for process in (*drivers.values(), coordinator):
            if process.alive():
                os.killpg(process.process.pid, signal.SIGCONT)  # type: ignore[union-attr]
                process.kill9()
    state = group.state()
    assert not state.halts, f"partitions halted: {state.halts}"
    count = _assert_exact_copy(kafka, topic, remote, producer.sent)
    rejoins = sum(1 for e in group.events() if isinstance(e, DriverJoined)) - 2
    print(f"\nkill -STOP x5 ({'; '.join(pauses)}): {count}; rejoined {rejoins} times")


def test_a_second_process_with_a_driver_id_in_use_takes_over_and_the_first_stops(
    kafka, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    """A driver restarted under its old --id while the first process with that id still
    runs: the new incarnation replaces the old one, which stops; the two never copy side
    by side, and the copy is exact."""
    topic = kafka.create_topic("primary", unique_name("sameid"), partitions=PARTITIONS)
    remote = f"primary.{topic}"
    kafka.created.append(("backup", remote))
    config = _group_config(kafka, tmp_path, unique_name, topic)
    group = ControlGroup(config)
    coordinator = CoordinatorProcess(
        config, tmp_path / "coordinator.log", "c1", "--projection", "none"
    )
    first = DriverProcess(
        config, tmp_path / "first.log", spark_master="local[1]", args=["--id", "d1"]
    )
    second = DriverProcess(
        config, tmp_path / "second.log", spark_master="local[1]", args=["--id", "d1"]
    )
    # ~500 records/s: a load at every moment of the takeover is the point, not its size.
    producer = SteadyProducer(kafka["primary"], topic, PARTITIONS, per_tick=25)

    logs = log_tails((coordinator, first, second), 2000)

    try:
        coordinator.start()
        first.start()
        producer.start()
        wait_until(lambda: group.settled(["d1"]), 240, "d1 runs", detail=logs)
        wait_until(
            lambda: sum(end_offsets(kafka["backup"], remote).values()) > 2000,
            60,
            "copying",
            detail=logs,
        )
        old_instance = group.state().drivers["d1"].instance
        second.start()
        wait_until(
            lambda: first.process.poll() is not None,  # type: ignore[union-attr]
            120,
            "the first process stops once its id is taken",
            detail=logs,
        )
        assert first.process.returncode == 3  # type: ignore[union-attr]
        assert "was taken over by another process" in first.log_text()
        wait_until(
            lambda: group.state().drivers["d1"].instance != old_instance and group.settled(["d1"]),
            120,
            "the second process runs d1's tasks",
            detail=logs,
        )
        producer.finish()
        wait_caught_up(kafka["primary"], topic, kafka["backup"], remote, 180, detail=logs)
        assert second.stop() == 0
    finally:
        producer.stop.set()
        for process in (first, second, coordinator):
            if process.alive():
                process.kill9()
    left = [e for e in group.events() if isinstance(e, DriverLeft)]
    assert any("replaced by instance" in e.reason for e in left)
    assert not group.state().halts
    count = _assert_exact_copy(kafka, topic, remote, producer.sent)
    print(f"\nsecond process with id d1: the first exited 3, {count}")


def test_a_record_the_target_refuses_halts_only_its_partition(
    kafka, run_driver, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    """A 2.2 MB record on a topic whose remote copy accepts only 1 MB: that partition halts
    after its tries with the reason and the offset; another topic of the same flow, written
    to all along, is copied exactly; the flow's status shows both. Each try breaks its copy
    unit: the unit's partitions with nothing in flight restart where they were
    acknowledged, not reconciled (their copy is compared in full; a quiet topic gives each
    slot such a partition whatever the load, since the steady topic's may be in flight)."""
    big = kafka.create_topic(
        "primary", unique_name("big"), partitions=2, config={"max.message.bytes": "3145728"}
    )
    small = kafka.create_topic("primary", unique_name("small"), partitions=2)
    quiet = kafka.create_topic("primary", unique_name("quiet"), partitions=4)
    big_remote = kafka.create_topic(
        "backup", f"primary.{big}", partitions=2, config={"max.message.bytes": "1048588"}
    )
    small_remote, quiet_remote = f"primary.{small}", f"primary.{quiet}"
    kafka.created += [("backup", small_remote), ("backup", quiet_remote)]
    produce(
        kafka["primary"],
        big,
        [
            Record(b"before", b"x", (), None, 0),
            Record(b"poison", b"p" * 2_200_000, (), None, 0),
            Record(b"after", b"y", (), None, 0),
            *[Record(f"p1-{i}".encode(), b"z", (), None, 1) for i in range(10)],
        ],
        config={"message.max.bytes": 3145728},
    )
    produce(
        kafka["primary"], small, [Record(f"s{i}".encode(), b"v", (), None, 0) for i in range(20)]
    )
    produce(
        kafka["primary"], quiet, [Record(f"q{i}".encode(), b"q", (), None, i % 4) for i in range(8)]
    )
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {
                "enabled": True,
                "topics": [big, small, quiet],
                # Keep the remote limit at 1 MB (config sync would copy the source's 3 MB).
                "config.properties.exclude": "max.message.bytes",
            },
            "backup->primary": {"enabled": False},
        },
    )
    steady = SteadyProducer(kafka["primary"], small, 2, per_tick=5)
    steady.start()
    try:
        driver = run_driver(config)
        wait_until(
            lambda: any(h["topic"] == big for h in driver.status()["copy"]["halted"]),
            120,
            "the partition with the refused record halts",
        )
    finally:
        steady.finish()
    wait_until(
        lambda: all(
            copied(kafka["primary"], topic, kafka["backup"], remote)
            for topic, remote in ((small, small_remote), (quiet, quiet_remote))
        ),
        60,
        "the other topics of the flow are copied",
    )
    # The big topic's other partition shares the broken unit: after the last try it may
    # wait out the old run's lease and a backoff before it copies on.
    wait_until(
        lambda: end_offsets(kafka["backup"], big_remote).get(1, 0) >= 10,
        60,
        "the big topic's partition 1 copies on",
        detail=lambda: str(driver.status()["copy"]["errors"]),
    )
    # Counters arrive with the slots' reports (every 200 ms), after the records land. (A
    # copy that landed unacknowledged when a unit broke is verified, not counted.)
    wait_until(lambda: driver.status()["copy"]["records"] >= 39, 15, "the flow counts 39 records")
    status = driver.status()["copy"]
    (halt,) = [h for h in status["halted"] if h["topic"] == big]
    print(f"\nhalted: {halt['topic']}-{halt['partition']}: {halt['reason']}")
    print(
        f"flow status: {status['by_status']}, {status['records']} records copied,"
        f" {status['exact_restarts']} partitions restarted where acknowledged"
    )
    assert halt["partition"] == 0 and halt["kind"] == "poison"
    assert "source offset 1 could not be written after 3 tries" in halt["reason"]
    # The batch copy (the default) names the broker's error, the record copy librdkafka's.
    assert "MESSAGE_TOO_LARGE" in halt["reason"] or "MSG_SIZE_TOO_LARGE" in halt["reason"]
    ends = end_offsets(kafka["backup"], big_remote)
    assert ends == {0: 1, 1: 10}, "partition 0 stops before the record; partition 1 copies on"
    big_source, big_target = (
        consume_all(kafka["primary"], big),
        consume_all(kafka["backup"], big_remote),
    )
    assert content(big_target[1]) == content(big_source[1]), "the big topic's partition 1"
    assert content(big_target[0]) == content(big_source[0])[:1], "only the record before"
    source, target = (
        consume_all(kafka["primary"], small),
        consume_all(kafka["backup"], small_remote),
    )
    count = count_copy(source, target)
    assert (count.produced, count.missing, count.duplicated) == (20 + steady.sent, 0, 0), str(count)
    assert all(content(target[p]) == content(source[p]) for p in (0, 1))
    source = consume_all(kafka["primary"], quiet)
    target = consume_all(kafka["backup"], quiet_remote)
    assert all(content(target[p]) == content(source[p]) for p in range(4)), "the quiet topic"
    assert sum(len(records) for records in target.values()) == 8
    assert status["exact_restarts"] >= 1, "the broken unit's idle partitions were not reconciled"


def test_topics_deleted_or_recreated_under_load_halt_their_partitions_and_stop_cleanly(
    kafka, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    """The remote topic of one source topic is deleted under load, and another source topic
    is deleted and recreated: their partitions halt with the reason (recreated or
    missing), a third topic copies on, nothing hangs, and SIGTERM still stops the driver
    within its grace period."""
    doomed_remote_of = kafka.create_topic("primary", unique_name("lose-remote"), partitions=2)
    recreated = kafka.create_topic("primary", unique_name("recreated"), partitions=2)
    steady = kafka.create_topic("primary", unique_name("steady"), partitions=2)
    # The remote topic to be deleted exists before the driver starts (made as the driver
    # would, by the test): a remote topic the driver created itself is trusted to exist
    # for a minute after its creation (flow_topics.TRUST_PRESENT_S, unit-tested in
    # test_flow_topics.py), which held this test 45 s before the deletion was noticed.
    kafka.create_topic("backup", f"primary.{doomed_remote_of}", partitions=2)
    for topic in (recreated, steady):
        kafka.created.append(("backup", f"primary.{topic}"))
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {
                "enabled": True,
                "topics": [doomed_remote_of, recreated, steady],
            },
            "backup->primary": {"enabled": False},
        },
    )
    driver = DriverProcess(config, tmp_path / "driver.log", spark_master="local[2]")
    # ~500 records/s a topic (the default is ~1,500, three times over for one driver).
    producers = [
        SteadyProducer(kafka["primary"], topic, 2, per_tick=25)
        for topic in (doomed_remote_of, recreated, steady)
    ]
    try:
        driver.start()
        for producer in producers:
            producer.start()
        wait_until(
            lambda: all(
                sum(end_offsets(kafka["backup"], f"primary.{t}").values()) > 500
                for t in (doomed_remote_of, recreated, steady)
            ),
            120,
            "all three topics copy",
            detail=lambda: driver.log_text()[-3000:],
        )
        delete_topics(kafka["backup"], [f"primary.{doomed_remote_of}"])
        producers[1].stop.set()
        producers[1].join(30)
        delete_topics(kafka["primary"], [recreated])
        time.sleep(2)
        create_topic(kafka["primary"], recreated, partitions=2)
        produce(
            kafka["primary"],
            recreated,
            [Record(f"new-{i}".encode(), b"n", (), None, i % 2) for i in range(50)],
        )
        status_url = None

        def halted() -> set[tuple[str, str]]:
            nonlocal status_url
            if status_url is None:
                status_url = _driver_url(driver) + "/v1/flows/primary/backup/status"
            return {(h["topic"], h["kind"]) for h in get_json(status_url)["copy"]["halted"]}

        wait_until(
            lambda: {t for t, _ in halted()} >= {doomed_remote_of, recreated},
            120,
            "both partitions' topics halt",
            detail=lambda: driver.log_text()[-3000:],
        )
        kinds = halted()
        print(f"\nhalted: {sorted(kinds)}")
        assert all(kind in ("recreated", "missing", "truncated") for _, kind in kinds)
        # The third topic copies on. (Its partitions may share a unit that broke on the
        # deleted remote topic: those with copies in flight are reconciled after the
        # settle, write.timeout / 2 + 1 s, so it is waited for, not sampled over 3 s.)
        steady_before = sum(end_offsets(kafka["backup"], f"primary.{steady}").values())
        wait_until(
            lambda: sum(end_offsets(kafka["backup"], f"primary.{steady}").values()) > steady_before,
            60,
            "the third topic copies on",
            detail=lambda: driver.log_text()[-3000:],
        )
        assert steady not in {t for t, _ in halted()}
        new_copies = consume_all(
            kafka["backup"], f"primary.{recreated}", isolation_level="read_uncommitted"
        )
        assert not any(
            r.key and r.key.startswith(b"new-") for rs in new_copies.values() for r in rs
        ), "nothing of the recreated topic was copied from the old position"
        stopped = time.monotonic()
        assert driver.stop(timeout=90) == 0
        print(f"SIGTERM: the driver stopped in {time.monotonic() - stopped:.1f} s")
    finally:
        for producer in producers:
            producer.stop.set()
        if driver.alive():
            driver.kill9()


def _driver_url(driver: DriverProcess) -> str:
    """The REST URL a standalone driver logged at start-up."""
    for line in driver.log_text().splitlines():
        if "REST at " in line:
            return line.split("REST at ")[1].split(";")[0].strip()
    raise AssertionError(f"the driver logged no REST URL\n{driver.log_text()[-2000:]}")
