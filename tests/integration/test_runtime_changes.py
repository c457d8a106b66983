"""srm-control on a running coordinator and driver: replication of a topic starts and
stops within seconds of the command, without restarting anything. The flow comes from an
srm.yaml that sets no ``topics``: SRM's default, nothing replicated until allowed."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Producer
from srm_control import cli as control_cli
from srm_harness.clients import consume_all, end_offsets, list_topics
from srm_harness.compare import content
from srm_harness.control import write_config
from srm_harness.processes import CoordinatorProcess, DriverProcess
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]


class Ticker(threading.Thread):
    """One record every 50 ms, its value the wall-clock time it was produced."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})

    def run(self) -> None:
        while not self.stop.wait(0.05):
            self._producer.produce(self.topic, value=f"{time.time():.3f}".encode())
            self._producer.poll(0)
        self._producer.flush(30)


def test_topics_add_and_remove_take_effect_within_seconds(kafka, tmp_path, unique_name, capsys):  # type: ignore[no-untyped-def]
    topic = kafka.create_topic("primary", unique_name("live"), partitions=2)
    remote = f"primary.{topic}"
    kafka.created.append(("backup", remote))
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {"enabled": True},  # no topics: nothing until --add
            "backup->primary": {"enabled": False},
        },
        replication={"srm.control.topic.prefix": unique_name("live")},
    )
    coordinator = CoordinatorProcess(
        config, tmp_path / "coordinator.log", "c1", "--projection", "none"
    )
    driver = DriverProcess(
        config, tmp_path / "driver.log", spark_master="local[1]", args=["--id", "d1"]
    )
    ticker = Ticker(kafka["primary"], topic)

    def control(*args: str) -> None:
        code = control_cli.main(
            ["--config", str(config), "topics", "--source", "primary", "--target", "backup", *args]
        )
        captured = capsys.readouterr()
        assert code == 0, captured.err
        print(captured.out.strip())

    def copied() -> int:
        return (
            sum(end_offsets(kafka["backup"], remote).values())
            if remote in (list_topics(kafka["backup"]))
            else 0
        )

    try:
        coordinator.start()
        driver.start()
        ticker.start()
        wait_until(
            lambda: "started the heartbeat task" in driver.log_text(),
            180,
            "the driver runs",
            detail=lambda: driver.log_text()[-3000:],
        )
        time.sleep(2)
        assert copied() == 0  # srm.yaml allows no topics: nothing is copied yet

        control("--add", topic)
        added = time.monotonic()
        wait_until(
            lambda: copied() > 0,
            120,
            "replication starts",
            detail=lambda: driver.log_text()[-3000:],
            step=0.1,
        )
        start_s = time.monotonic() - added
        control("--list")

        control("--remove", topic)
        removed_at = time.time()
        # Stopped: the target stays still for 8 s while the ticker keeps producing (a
        # bounded wait: copying that never stops fails the test instead of hanging it).
        deadline = time.monotonic() + 120
        last, quiet_since = copied(), time.monotonic()
        while time.monotonic() - quiet_since < 8:
            assert time.monotonic() < deadline, "copying did not stop after --remove"
            time.sleep(0.2)
            now = copied()
            if now != last:
                last, quiet_since = now, time.monotonic()
        records = consume_all(kafka["backup"], remote)
        newest = max(float(r.value) for rs in records.values() for r in rs)
        stop_s = newest - removed_at
        print(
            f"srm-control --add: first record on the target {start_s:.1f} s after the command;"
            f" --remove: the last record copied was produced {stop_s:.1f} s after it"
        )
        # The source went on growing; the copy did not follow.
        produced = sum(end_offsets(kafka["primary"], topic).values())
        assert produced > copied() + 100
        ticker.stop.set()
        assert driver.stop() == 0
    finally:
        ticker.stop.set()
        for process in (driver, coordinator):
            if process.alive():
                process.kill9()
    # Whatever was copied is an exact prefix of each source partition.
    source = consume_all(kafka["primary"], topic)
    for partition, copies in records.items():
        assert content(copies) == content(source[partition][: len(copies)])
