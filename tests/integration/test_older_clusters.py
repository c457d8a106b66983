"""Replication with an older Kafka cluster (3.9 and 3.6 in KRaft mode, 3.6 in ZooKeeper
mode, from the official jars) as the source into the session's 4.1 cluster, and as the
target of it: every record copied
with its key, value, headers, timestamp and partition; the group's commits checkpointed
and translated exactly; failover to the target and failback, with nothing skipped and
nothing read twice. One older cluster per version, shared by its tests
(docs/compatibility.md)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from confluent_kafka import TopicCollection
from srm_common.adapters.topic_ids import ZERO_TOPIC_ID
from srm_control import cli as control_cli
from srm_harness.clients import admin, consume_all, produce
from srm_harness.compare import content, copied
from srm_harness.control import write_config
from srm_harness.group_ledger import Ledger
from srm_harness.group_scenario import consume, group_offsets, produce_numbered
from srm_harness.pool import OLDER_KAFKA, ZOOKEEPER_MODE
from srm_harness.records import RECENT_MS, Record
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 3
PER_PARTITION = 150


def _control(config: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = control_cli.main(["--config", str(config), *args])
    return code, out.getvalue(), err.getvalue()


def _topic_id(bootstrap: str, topic: str) -> str:
    handle = admin(bootstrap)  # held: a dropped client ends its pending calls
    described = handle.describe_topics(TopicCollection([topic]))
    return str(described[topic].result(30).topic_id)


def _records(count: int) -> list[Record]:
    """Keys, a null key, headers (one with a null value), CreateTimes in the past."""
    return [
        Record(
            key=None if i % 7 == 0 else f"k{i}".encode(),
            value=f"v{i}".encode() * (1 + i % 5),
            headers=(("seq", str(i).encode()), ("empty", None)),
            timestamp_ms=RECENT_MS + i,
            partition=i % PARTITIONS,
        )
        for i in range(count)
    ]


@pytest.mark.parametrize("role", ["source", "target"])
@pytest.mark.parametrize("older", sorted(OLDER_KAFKA))
def test_copies_checkpoints_and_fails_over_with_an_older_cluster(  # type: ignore[no-untyped-def]
    kafka_mixed, older, role, run_driver, tmp_path, unique_name
):
    kafka = kafka_mixed(older, role)
    version = OLDER_KAFKA[older]
    mode = "ZooKeeper" if older in ZOOKEEPER_MODE else "KRaft"
    exact = kafka.create_topic("primary", unique_name("exact"), partitions=PARTITIONS)
    orders = kafka.create_topic("primary", unique_name("orders"), partitions=PARTITIONS)
    kafka.created += [("backup", f"primary.{exact}"), ("backup", f"primary.{orders}")]
    produce(kafka["primary"], exact, _records(300))
    numbered = produce_numbered(
        kafka["primary"], orders, partitions=PARTITIONS, per_partition=PER_PARTITION, abort_every=3
    )
    group = unique_name("app")
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {
                "enabled": True,
                "topics": [exact, orders],
                "groups": [group],
                "emit.checkpoints.interval.seconds": 1,
                "refresh.groups.interval.seconds": 1,
            },
            "backup->primary": {"enabled": False, "emit.heartbeats.enabled": False},
        },
        replication={"emit.heartbeats.enabled": False},
    )
    driver = run_driver(config)
    for topic in (exact, orders):
        wait_until(
            lambda topic=topic: copied(
                kafka["primary"], topic, kafka["backup"], f"primary.{topic}"
            ),
            120,
            f"{topic} copied ({older} as the {role})",
            step=0.5,
        )
    source = consume_all(kafka["primary"], exact)

    def same_content() -> bool:  # read_committed: what a consumer of the copy sees
        target = consume_all(kafka["backup"], f"primary.{exact}")
        return all(content(target[p]) == content(source[p]) for p in range(PARTITIONS))

    wait_until(same_content, 60, "every partition's records, in order, on the target")
    # The copy's recreated-topic check rests on topic ids: the older cluster must give them
    # (ZooKeeper mode too, since 2.8), else the driver would have stopped with one line.
    older_side = "primary" if role == "source" else "backup"
    older_topic = exact if role == "source" else f"primary.{exact}"
    topic_id = _topic_id(kafka[older_side], older_topic)
    assert topic_id != ZERO_TOPIC_ID, f"{older} gives {older_topic} no topic id"

    ledger = Ledger(numbered.ids)
    first = ledger.read(consume(kafka["primary"], [orders], group, 200), "primary")
    commits = group_offsets(kafka["primary"], group)
    remote = {(f"primary.{t}", p) for t, p in commits}

    def exported() -> dict[tuple[str, int], int]:
        code, csv, _err = _control(
            config, "offsets", "--source", "primary", "--target", "backup", "--group", group,
            "--export",
        )  # fmt: skip
        rows = [line.split(",") for line in csv.split()] if code == 0 else []
        return {(t, int(p)): int(o) for t, p, o in rows}

    wait_until(lambda: set(exported()) == remote, 90, "checkpoints of every commit")
    code, out, err = _control(
        config, "failover", "--group", group, "--from", "primary", "--to", "backup"
    )
    assert code == 0, f"{out}\n{err}"
    assert group_offsets(kafka["backup"], group) == exported()
    second = ledger.read(
        consume(kafka["backup"], [f"primary.{orders}"], group, 150), "backup after failover"
    )
    code, out, err = _control(
        config, "failback", "--group", group, "--from", "backup", "--to", "primary"
    )
    assert code == 0, f"{out}\n{err}"
    third = ledger.read(consume(kafka["primary"], [orders], group), "primary after failback")
    driver.stop()
    total = ledger.tally()
    print(
        f"\nKafka {version} ({mode}) as the {role}: topic id {topic_id};"
        " 300 records copied with keys, headers and"
        f" timestamps; {first}; {second}; {third}; {total}"
    )
    assert (second.read, third.read) == (150, numbered.committed_count - 350)
    assert total.skipped == () and total.read_twice == () and total.not_reached == 0, str(total)
