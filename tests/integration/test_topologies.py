"""Replication topologies through the real driver process (``srm-driver --config FILE``).

Each test writes a configuration whose flows copy only the test's own topics, starts the
driver (Python and its Spark JVM), waits until the remote topics catch up with their
sources, compares full partition contents, and stops the driver with SIGTERM (exit 0).
Driver start-up costs seconds, so one run checks several things where that stays
readable: a topology, its loop freedom, and its heartbeats.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    ResourceType,
)
from srm_common.domain.policy import ORIGIN_HEADER
from srm_common.domain.records import Heartbeat
from srm_driver.shared_target import COPY_HEADER
from srm_harness.clients import admin, consume_all, create_topic, end_offsets, list_topics, produce
from srm_harness.compare import content
from srm_harness.control import write_config
from srm_harness.processes import DriverProcess
from srm_harness.records import Record
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

IDENTITY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
CATCH_UP_S = 180  # driver start-up plus copying, on a busy 2-core machine


# --- helpers --------------------------------------------------------------------------


@contextmanager
def _driver(config: Path, log: Path) -> Iterator[DriverProcess]:
    """A running driver; stopped with SIGTERM at the end, which must exit 0."""
    driver = DriverProcess(config, log)
    driver.start()
    try:
        yield driver
    except BaseException:
        if driver.alive():
            driver.kill9()
        raise
    code = driver.stop()
    assert code == 0, f"driver exited with {code}\n{driver.log_text()[-4000:]}"


HALTED = re.compile(r"halted|[Nn]othing (more )?is copied")


def _wait(driver: DriverProcess, predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Until ``predicate``; fails early if the driver halts a partition or dies, and shows
    the end of the driver's log as it is then."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        log = driver.log_text()
        if HALTED.search(log) or not driver.alive():
            break
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout:.0f} s\n{driver.log_text()[-4000:]}")


def _assert_no_halt(log: str) -> None:
    assert not HALTED.search(log), log[-4000:]


def _records(label: str, count: int, partitions: int, start: int = 0) -> list[Record]:
    # Explicit CreateTimes, but recent ones: older than retention.ms (7 days) and the
    # broker's retention check may delete them before they are copied.
    base = int(time.time() * 1000) - 60_000
    return [
        Record(
            f"{label}-{i}".encode(),
            f"{label} value {i}".encode(),
            (("seq", str(i).encode()), ("from", label.encode())),
            base + i,
            i % partitions,
        )
        for i in range(start, start + count)
    ]


def _wait_caught_up(
    driver: DriverProcess,
    source: str,
    topic: str,
    target: str,
    remote: str,
    timeout: float = CATCH_UP_S,
) -> None:
    """Until every partition of ``remote`` ends where its source partition ends."""
    _wait(
        driver,
        lambda: end_offsets(target, remote) == end_offsets(source, topic),
        timeout,
        f"{remote} catches up with {topic}",
    )


def _assert_same(source: str, topic: str, target: str, remote: str) -> int:
    """Full content of every partition equal; returns the record count."""
    upstream = consume_all(source, topic)
    downstream = consume_all(target, remote)
    assert sorted(downstream) == sorted(upstream), f"{remote}: partitions differ"
    for partition, records in upstream.items():
        assert content(downstream[partition]) == content(records), f"{remote}-{partition}"
    return sum(len(records) for records in upstream.values())


def _heartbeats(bootstrap: str, topic: str, since_ms: int) -> dict[tuple[str, str], list[int]]:
    """Heartbeat timestamps in ``topic`` from ``since_ms`` on, per (source, target)."""
    found: dict[tuple[str, str], list[int]] = {}
    for records in consume_all(bootstrap, topic).values():
        for record in records:
            beat = Heartbeat.decode(record.key, record.value)
            if beat.timestamp_ms >= since_ms:
                pair = (beat.source_cluster_alias, beat.target_cluster_alias)
                found.setdefault(pair, []).append(beat.timestamp_ms)
    return found


def _produce(bootstrap: str, topic: str, records: Sequence[Record]) -> None:
    produce(bootstrap, topic, records)


def _remember(kafka, names: Mapping[str, Sequence[str]]) -> None:  # type: ignore[no-untyped-def]
    """Remote topics the driver creates are deleted at the end of the test too."""
    for alias, topics in names.items():
        kafka.created.extend((alias, topic) for topic in topics)


# --- bi-directional -----------------------------------------------------------------------


def test_bidirectional_copies_both_ways_and_never_loops(kafka, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    """primary <-> backup: ``primary.t`` on backup, ``backup.u`` on primary, and never
    ``backup.primary.t`` or ``primary.backup.u``, although each flow's allow list names
    the other flow's remote topic: the cycle rule keeps them out, not the filter."""
    primary, backup = kafka["primary"], kafka["backup"]
    t = kafka.create_topic("primary", unique_name("t"), partitions=2)
    u = kafka.create_topic("backup", unique_name("u"), partitions=3)
    _remember(kafka, {"backup": [f"primary.{t}"], "primary": [f"backup.{u}"]})
    _produce(primary, t, _records("t", 100, 2))
    _produce(backup, u, _records("u", 90, 3))
    config = write_config(
        tmp_path,
        {"primary": primary, "backup": backup},
        flows={
            "primary->backup": {"enabled": True, "topics": [t, f"backup\\.{u}"]},
            "backup->primary": {"enabled": True, "topics": [u, f"primary\\.{t}"]},
        },
        # A refresh a second: the three below take 3 s, not 6 s.
        replication={"refresh.topics.interval.seconds": 1},
    )
    with _driver(config, tmp_path / "driver.log") as driver:
        _wait_caught_up(driver, primary, t, backup, f"primary.{t}")
        _wait_caught_up(driver, backup, u, primary, f"backup.{u}")
        _produce(primary, t, _records("t", 50, 2, start=100))  # and while it runs
        _produce(backup, u, _records("u", 60, 3, start=90))
        _wait_caught_up(driver, primary, t, backup, f"primary.{t}")
        _wait_caught_up(driver, backup, u, primary, f"backup.{u}")
        time.sleep(3)  # three topic refreshes: a loop would show by now
        assert f"backup.primary.{t}" not in list_topics(primary)
        assert f"primary.backup.{u}" not in list_topics(backup)
        # Heartbeats too: each side's are copied once, never back.
        assert "primary.heartbeats" in list_topics(backup)
        assert "backup.heartbeats" in list_topics(primary)
        assert "backup.primary.heartbeats" not in list_topics(primary)
        assert "primary.backup.heartbeats" not in list_topics(backup)
        assert end_offsets(backup, f"primary.{t}") == end_offsets(primary, t)
        assert end_offsets(primary, f"backup.{u}") == end_offsets(backup, u)
        log = driver.log_text()
    assert _assert_same(primary, t, backup, f"primary.{t}") == 150
    assert _assert_same(backup, u, primary, f"backup.{u}") == 150
    _assert_no_halt(log)


# --- three clusters: chain, fan-in, fan-out ------------------------------------------------


def test_chain_fan_in_and_fan_out_on_three_clusters(kafka3, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    """One driver, flows primary->backup, backup->dr and primary->dr, three topic sets:

    * chain: ``c`` on primary -> ``primary.c`` on backup -> ``backup.primary.c`` on dr;
    * fan-in: ``f`` on primary and ``f`` on backup -> ``primary.f`` and ``backup.f`` on dr;
    * fan-out: ``o`` on primary -> ``primary.o`` on backup and on dr.
    """
    kafka = kafka3
    primary, backup, dr = kafka["primary"], kafka["backup"], kafka["dr"]
    c = kafka.create_topic("primary", unique_name("chain"), partitions=2)
    f = unique_name("fanin")
    kafka.create_topic("primary", f, partitions=2)
    kafka.create_topic("backup", f, partitions=1)
    o = kafka.create_topic("primary", unique_name("fanout"), partitions=3)
    _remember(
        kafka,
        {
            "backup": [f"primary.{c}", f"primary.{o}"],
            "dr": [f"backup.primary.{c}", f"primary.{f}", f"backup.{f}", f"primary.{o}"],
        },
    )
    _produce(primary, c, _records("chain", 80, 2))
    _produce(primary, f, _records("fanin-primary", 40, 2))
    _produce(backup, f, _records("fanin-backup", 30, 1))
    _produce(primary, o, _records("fanout", 60, 3))
    config = write_config(
        tmp_path,
        {"primary": primary, "backup": backup, "dr": dr},
        flows={
            "primary->backup": {"enabled": True, "topics": [c, o]},
            "backup->dr": {"enabled": True, "topics": [f"primary\\.{c}", f]},
            "primary->dr": {"enabled": True, "topics": [f, o]},
        },
    )
    expected = [  # (source cluster, topic, target cluster, remote topic)
        (primary, c, backup, f"primary.{c}"),
        (backup, f"primary.{c}", dr, f"backup.primary.{c}"),
        (primary, f, dr, f"primary.{f}"),
        (backup, f, dr, f"backup.{f}"),
        (primary, o, backup, f"primary.{o}"),
        (primary, o, dr, f"primary.{o}"),
    ]
    with _driver(config, tmp_path / "driver.log") as driver:
        for source, topic, target, remote in expected:
            _wait_caught_up(driver, source, topic, target, remote)
        _produce(primary, c, _records("chain", 20, 2, start=80))  # new records go all the way
        _wait_caught_up(driver, primary, c, backup, f"primary.{c}")
        _wait_caught_up(driver, backup, f"primary.{c}", dr, f"backup.primary.{c}")
        log = driver.log_text()
    counts = [_assert_same(*route) for route in expected]
    assert counts == [100, 100, 40, 30, 60, 60]
    assert _assert_same(primary, c, dr, f"backup.primary.{c}") == 100  # end to end
    on_dr = list_topics(dr)
    assert f"primary.{c}" not in on_dr  # primary->dr does not select the chain topic
    assert f"dr.primary.{c}" not in list_topics(backup)
    _assert_no_halt(log)


# --- identity policy, active/active ---------------------------------------------------------


def test_identity_policy_active_active_is_loop_free(kafka, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    """Same topic ``t`` on both clusters, both flows on: each side ends up with its own
    records and the other side's, each once, copies stamped with ``srm.origin``; also
    across a kill -9 of the driver while both sides keep producing."""
    primary, backup = kafka["primary"], kafka["backup"]
    t = unique_name("aa")
    kafka.create_topic("primary", t, partitions=2)
    kafka.create_topic("backup", t, partitions=2)
    _produce(primary, t, _records("from-primary", 40, 2))
    _produce(backup, t, _records("from-backup", 30, 2))
    config = write_config(
        tmp_path,
        {"primary": primary, "backup": backup},
        flows={
            "primary->backup": {"enabled": True, "topics": [t]},
            "backup->primary": {"enabled": True, "topics": [t]},
        },
        # Heartbeats stay out: their remote topics are shared with the other tests.
        replication={"replication.policy.class": IDENTITY, "heartbeats.replication.enabled": False},
    )

    def keys(bootstrap: str) -> list[bytes | None]:
        return [r.key for rs in consume_all(bootstrap, t).values() for r in rs]

    def complete() -> bool:
        return len(keys(primary)) >= 140 and len(keys(backup)) >= 140

    with _driver(config, tmp_path / "driver.log") as driver:
        _wait(driver, lambda: len(keys(backup)) >= 70, CATCH_UP_S, "first copies")
        _produce(primary, t, _records("from-primary", 40, 2, start=40))
        driver.kill9()  # the remote partitions have local writers: resume by srm.copy
        _produce(backup, t, _records("from-backup", 30, 2, start=30))
        driver.start()
        _wait(driver, complete, CATCH_UP_S, "both sides complete")
        time.sleep(6)  # a loop would keep adding records
        log = driver.log_text()
    for bootstrap, here, there in ((primary, "primary", "backup"), (backup, "backup", "primary")):
        records = [r for rs in consume_all(bootstrap, t).values() for r in rs]
        assert len(records) == 140 and len({r.key for r in records}) == 140, here
        for record in records:
            origins = [v for k, v in record.headers if k == ORIGIN_HEADER]
            first_produced_here = record.key is not None and record.key.startswith(
                f"from-{here}".encode()
            )
            assert origins == ([] if first_produced_here else [there.encode()]), record
            copies = [v for k, v in record.headers if k == COPY_HEADER]
            assert len(copies) == (0 if first_produced_here else 1), record
    _assert_no_halt(log)


# --- heartbeats -----------------------------------------------------------------------------


def test_heartbeats_on_every_target_and_replicated_as_remote_topics(kafka, tmp_path):  # type: ignore[no-untyped-def]
    """Flow primary->backup copies nothing but heartbeats; backup->primary is disabled and
    still emits them, so primary has a ``heartbeats`` topic for the flow to copy:
    ``primary.heartbeats`` on backup proves the primary->backup path."""
    primary, backup = kafka["primary"], kafka["backup"]
    interval = 1
    config = write_config(
        tmp_path,
        {"primary": primary, "backup": backup},
        flows={
            "primary->backup": {"enabled": True, "topics": []},
            "backup->primary": {"enabled": False},
        },
        replication={"emit.heartbeats.interval.seconds": interval},
    )
    started_ms = int(time.time() * 1000)

    def replicated() -> bool:
        if "primary.heartbeats" not in list_topics(backup):
            return False
        beats = _heartbeats(backup, "primary.heartbeats", started_ms)
        return len(beats.get(("backup", "primary"), [])) >= 3

    with _driver(config, tmp_path / "driver.log") as driver:
        _wait(driver, replicated, CATCH_UP_S, "primary.heartbeats on backup")
        time.sleep(4 * interval)
        log = driver.log_text()
    stopped_ms = int(time.time() * 1000)

    on_backup = _heartbeats(backup, "heartbeats", started_ms)
    on_primary = _heartbeats(primary, "heartbeats", started_ms)
    assert set(on_backup) == {("primary", "backup")}
    assert set(on_primary) == {("backup", "primary")}  # emitted by the disabled flow
    for stamps in (on_backup[("primary", "backup")], on_primary[("backup", "primary")]):
        assert len(stamps) >= 5
        assert all(t <= stopped_ms for t in stamps)
        gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
        assert all(gap > 0 for gap in gaps), "heartbeat timestamps must advance"
        # About one per interval: never faster, and not far slower even on a busy machine.
        assert 0.9 * interval * 1000 <= statistics.median(gaps) <= 5 * interval * 1000, gaps

    copied = _heartbeats(backup, "primary.heartbeats", started_ms)
    assert set(copied) == {("backup", "primary")}
    assert copied[("backup", "primary")] == sorted(copied[("backup", "primary")])

    # What this run copied is a prefix of what primary got meanwhile, record for record.
    def since_start(bootstrap: str, topic: str) -> list[tuple[object, ...]]:
        records = consume_all(bootstrap, topic)[0]
        return content(r for r in records if (r.timestamp_ms or 0) >= started_ms)

    source, target = since_start(primary, "heartbeats"), since_start(backup, "primary.heartbeats")
    assert target and source[: len(target)] == target
    _assert_no_halt(log)


# --- remote topic lifecycle -------------------------------------------------------------------


def test_remote_topics_follow_new_topics_partitions_and_configs(kafka, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    """A topic created after the driver started, a config changed on the source and
    partitions added to a replicated topic all reach the target within their intervals."""
    primary, backup = kafka["primary"], kafka["backup"]
    prefix = unique_name("life")
    a, b = f"{prefix}-a", f"{prefix}-b"
    kafka.create_topic("primary", a, partitions=2, config={"retention.ms": "86400000"})
    _remember(kafka, {"backup": [f"primary.{a}", f"primary.{b}"], "primary": [b]})
    _produce(primary, a, _records("a", 40, 2))
    config = write_config(
        tmp_path,
        {"primary": primary, "backup": backup},
        flows={"primary->backup": {"enabled": True, "topics": [f"{prefix}-.*"]}},
        replication={
            "refresh.topics.interval.seconds": 2,
            "sync.topic.configs.interval.seconds": 2,
        },
    )
    handle = admin(primary)
    with _driver(config, tmp_path / "driver.log") as driver:
        _wait_caught_up(driver, primary, a, backup, f"primary.{a}")
        assert _topic_config(backup, f"primary.{a}", "retention.ms") == "86400000"

        # A new topic matching the allow list.
        create_topic(primary, b, partitions=3)
        _produce(primary, b, _records("b", 30, 3))
        _wait_caught_up(driver, primary, b, backup, f"primary.{b}", timeout=60)

        # A config change on a.
        change = ConfigResource(
            ResourceType.TOPIC,
            a,
            incremental_configs=[
                ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
            ],
        )
        handle.incremental_alter_configs([change])[change].result(30)
        _wait(
            driver,
            lambda: _topic_config(backup, f"primary.{a}", "retention.ms") == "3600000",
            60,
            f"retention.ms of primary.{a} follows",
        )

        # Two more partitions on a, with records in every partition.
        handle.create_partitions([NewPartitions(a, 4)])[a].result(30)
        wait_until(lambda: len(end_offsets(primary, a)) == 4, 30, "a grows")
        _produce(primary, a, _records("a-grown", 40, 4))

        def caught_up() -> bool:
            return end_offsets(backup, f"primary.{a}") == end_offsets(primary, a)

        _wait(driver, caught_up, 90, f"primary.{a} follows the growth")
        log = driver.log_text()
    _assert_no_halt(log)
    assert _assert_same(primary, b, backup, f"primary.{b}") == 30
    assert len(end_offsets(backup, f"primary.{a}")) == 4
    assert _assert_same(primary, a, backup, f"primary.{a}") == 80


def test_a_topic_that_cannot_be_created_remotely_does_not_stop_the_others(
    kafka, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    """A source topic with a 249-character name (Kafka's limit) has no valid remote name
    (``primary.`` + 249 characters); the flow's other topics must still be copied."""
    primary, backup = kafka["primary"], kafka["backup"]
    prefix = unique_name("bad")
    good = kafka.create_topic("primary", f"{prefix}-good", partitions=2)
    long_name = f"{prefix}-long-".ljust(249, "x")
    kafka.create_topic("primary", long_name, partitions=1)
    _remember(kafka, {"backup": [f"primary.{good}"]})
    _produce(primary, good, _records("good", 20, 2))
    _produce(primary, long_name, _records("long", 5, 1))
    config = write_config(
        tmp_path,
        {"primary": primary, "backup": backup},
        flows={"primary->backup": {"enabled": True, "topics": [f"{prefix}-.*"]}},
    )

    def copied() -> bool:
        return end_offsets(backup, f"primary.{good}") == end_offsets(primary, good)

    first_failure: list[float] = []

    def blocked() -> bool:
        """The flow failed to create the remote topic, and the copy job has been up for
        15 s or more since (Spark starts beside the flows' topics: on a loaded machine
        the failure comes 15 s and more before the first slot can copy)."""
        text = driver.log_text()
        if (
            not first_failure
            and "could not update remote topics" in text
            and "slots on Spark" in text
        ):
            first_failure.append(time.monotonic())
        return bool(first_failure) and time.monotonic() - first_failure[0] > 15

    with _driver(config, tmp_path / "driver.log") as driver:
        _wait(
            driver,
            lambda: copied() or blocked(),
            CATCH_UP_S,
            f"primary.{good} copied, or the flow blocked",
        )
        log = driver.log_text()
    assert copied(), log[-3000:]
    _assert_same(primary, good, backup, f"primary.{good}")


def _topic_config(bootstrap: str, topic: str, name: str) -> str | None:
    client = admin(bootstrap)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return client.describe_configs([resource])[resource].result(30)[name].value
