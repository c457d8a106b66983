"""Network faults: a Kafka cluster cut off for a minute while replication runs.

Needs the container backend (``kafka_containers``: Kafka in ``srm/kafka`` containers,
see ``docs/testing.md``); skips with the reason elsewhere, CI included. Each case starts
two private clusters (never the session's shared ones), replicates ``primary->backup``
with a coordinator and a driver as local processes, writes a steady numbered load to
``primary``, cuts one cluster off for ``CUT_S`` seconds, restores it, and then demands:
nothing lost, nothing doubled, every partition's copy equal to its source in order, no
partition halted, and the copy caught up; it prints the catch-up time and the figures.

How a cluster is cut off, and why that cuts the driver off. The driver runs on the host
and reaches a cluster through its published port (127.0.0.1:<port> -> the container's
host listener 9094); containers would use ``<alias>:9092`` on the run's network.

- ``docker pause`` (the source case) freezes every process of the container with the
  cgroup freezer: the broker answers nobody, on the published port or on the network.
  The kernel still accepts TCP connections for it, so clients see a black hole: requests
  time out rather than fail, the harder fault for a client (as a partition that drops
  packets, or a frozen VM). Its clocks jump by the minute when it wakes.
- ``docker network disconnect`` (the target case): the container leaves its only
  network. Measured here (Docker 20.10), its published port goes with that endpoint, so
  host clients get "connection refused" and in-network peers lose its name: a cut with
  fast failures, the broker itself running on. Were the container on a second network
  (the default bridge), the published port would survive the disconnect and only
  in-network peers would be cut; the test checks that the host port really refuses.

The flow's log lives in its target (``backup``): cutting the source hits only the data
path; cutting the target cuts the flow's control path too (its driver loses its lease
and rejoins when backup is back). ``tests/integration/test_site_loss.py`` kills and cuts
a whole site among three.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from srm_harness.clients import SteadyProducer, consume_all, create_topic, end_offsets
from srm_harness.compare import content, count_copy
from srm_harness.control import ControlGroup, write_config
from srm_harness.processes import CoordinatorProcess, DriverProcess, log_tails
from srm_harness.waits import wait_caught_up, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 4
CUT_S = 60.0
TIMINGS = {"srm.driver.session.timeout.ms": 6000, "srm.driver.write.timeout.ms": 4000}


class BufferingProducer(SteadyProducer):
    """The steady load (~1500 records/s) with room to queue a minute of it: while the
    source is cut off, librdkafka keeps what is sent (librdkafka's default holds 100,000,
    about a minute) and delivers it when the source is back; the idempotent producer sends
    each record once, in order."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(bootstrap, topic, partitions)
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "queue.buffering.max.messages": 1_000_000,
                "log_level": 3,  # no line per refused connection during the cut
            }
        )


def _answers(bootstrap: str) -> bool:
    """The cluster serves metadata within 5 s."""
    try:
        AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=5)
        return True
    except Exception:  # KafkaException: transport failure or timeout
        return False


def _seconds_until_copied(target: str, remote: str, records: int, timeout: float) -> float:
    """Seconds until the copy holds ``records`` records (keys are unique and the source
    has no transaction markers, so the copy's end offsets count its records)."""
    began = time.monotonic()
    wait_until(
        lambda: sum(end_offsets(target, remote).values()) >= records,
        timeout,
        f"{records} records copied",
        step=0.2,
    )
    return time.monotonic() - began


def test_the_source_paused_for_a_minute_loses_and_doubles_nothing(
    kafka_containers, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    """``primary`` (the source) paused for a minute under load, the flow's log on
    ``backup``: the driver copies nothing meanwhile, resumes when it wakes."""
    _cut_off_for_a_minute(kafka_containers, tmp_path, unique_name, cut="primary", how="pause")


def test_the_target_disconnected_for_a_minute_loses_and_doubles_nothing(
    kafka_containers, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    """``backup`` (the target, where the flow's log is) off the network for a minute
    under load: the copy stops writing, resumes when it is reachable again."""
    _cut_off_for_a_minute(kafka_containers, tmp_path, unique_name, cut="backup", how="disconnect")


def _cut_off_for_a_minute(pool, tmp_path, unique_name, *, cut: str, how: str) -> None:  # type: ignore[no-untyped-def]
    began = time.monotonic()
    token = unique_name("x").rsplit("-", 1)[1]
    containers = pool.start_private(f"primary-{token}", f"backup-{token}")
    started = time.monotonic() - began
    try:
        clusters = {
            "primary": containers[f"primary-{token}"],
            "backup": containers[f"backup-{token}"],
        }
        _run(clusters, tmp_path, unique_name, cut=cut, how=how, started=started)
    finally:
        for cluster in containers.values():
            cluster.stop()


def _run(clusters, tmp_path, unique_name, *, cut: str, how: str, started: float) -> None:  # type: ignore[no-untyped-def]
    source, target = clusters["primary"].bootstrap_servers, clusters["backup"].bootstrap_servers
    topic = unique_name("cut")
    remote = f"primary.{topic}"
    create_topic(source, topic, partitions=PARTITIONS)
    config = write_config(
        tmp_path,
        {"primary": source, "backup": target},
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
    group = ControlGroup(config)
    coordinator = CoordinatorProcess(
        config, tmp_path / "coordinator.log", "c1", "--projection", "none"
    )
    driver = DriverProcess(
        config, tmp_path / "driver.log", spark_master="local[2]", args=["--id", "d1"]
    )
    logs = log_tails((coordinator, driver), 3000)
    producer = BufferingProducer(source, topic, PARTITIONS)
    victim = clusters[cut]
    cut_off: Callable[[], None] = victim.pause if how == "pause" else victim.disconnect
    restore: Callable[[], None] = victim.unpause if how == "pause" else victim.connect

    def copied() -> int:
        return sum(end_offsets(target, remote).values())

    try:
        coordinator.start()
        driver.start()
        producer.start()
        wait_until(lambda: group.settled(["d1"]), 240, "d1 runs every task", detail=logs)
        wait_until(lambda: copied() > 3000, 120, "the flow copies", detail=logs)

        sent_before = producer.sent
        cut_off()
        cut_at = time.monotonic()
        assert not _answers(victim.bootstrap_servers), f"{cut} still answers after {how}"
        # A paused source: the driver may still write what it had fetched before the
        # pause (in flight); after 10 s the copy must stand still. A cut-off target
        # cannot be read, so there is nothing to count.
        time.sleep(max(0.0, 10 - (time.monotonic() - cut_at)))
        settled = copied() if cut == "primary" else 0
        time.sleep(max(0.0, CUT_S - (time.monotonic() - cut_at)))
        still = copied() - settled if cut == "primary" else None
        sent_at_restore = producer.sent
        restore()
        restored_at = time.monotonic()
        cut_for = restored_at - cut_at
        sent_during = sent_at_restore - sent_before
        # Caught up: everything produced until the restore (the minute's backlog, which
        # the producer itself delivers to a paused source only now) is on the target.
        caught_up = _seconds_until_copied(target, remote, sent_at_restore, 300)
        time.sleep(10)  # the load goes on a while after the catch-up
        producer.finish()
        wait_caught_up(source, topic, target, remote, 180, detail=logs)
        assert driver.stop() == 0
    finally:
        producer.stop.set()
        if victim.status() == "paused":
            victim.unpause()
        for process in (driver, coordinator):
            if process.alive():
                process.kill9()

    state = group.state()
    assert not state.halts, f"partitions halted: {state.halts}"
    assert still in (None, 0), f"{still} records copied from a paused source"
    source_records = consume_all(source, topic)
    target_records = consume_all(target, remote)
    count = count_copy(source_records, target_records)
    assert count.produced == producer.sent
    assert (count.missing, count.duplicated) == (0, 0), str(count)
    for partition in range(PARTITIONS):
        assert content(target_records[partition]) == content(source_records[partition]), (
            f"partition {partition} differs"
        )
    gained = "" if still is None else f", {still} copied in its last {CUT_S - 10:.0f} s"
    print(
        f"\n{cut} cut off by docker {how} for {cut_for:.0f} s under load"
        f" ({sent_during} records produced meanwhile{gained});"
        f" all {sent_at_restore} records sent until the restore were on the target"
        f" {caught_up:.1f} s after it; at the end {count};"
        f" the two containers started in {started:.1f} s"
    )
