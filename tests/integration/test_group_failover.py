"""A consumer group moves from primary to backup and home again: nothing skipped, nothing
read twice.

A standalone driver copies a numbered topic whose partitions have holes (aborted
transactions and their markers) from ``primary`` to ``backup`` and runs the flow's
checkpoint task. An application's group reads part of the topic on ``primary`` and
commits; then it moves to ``backup`` (``srm-control failover``, or automatic group offset
sync), reads ``primary.<topic>`` there, moves home (``srm-control failback``) and reads
the rest. A ledger of every id read counts records skipped and read twice over the whole
journey; once more on a topic written with zstd, whose copy stays zstd.
``test_mm2_failover.py`` runs the same journey with MirrorMaker 2.
"""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path

import pytest
from srm_common.domain.records import Checkpoint
from srm_control import cli as control_cli
from srm_harness.clients import consume_all
from srm_harness.compare import copied
from srm_harness.control import write_config
from srm_harness.group_ledger import Ledger
from srm_harness.group_scenario import consume, group_offsets, produce_numbered
from srm_harness.log_batches import WORTH_COMPRESSING, data_codecs, log_batches
from srm_harness.processes import CoordinatorProcess, DriverProcess, log_tails
from srm_harness.waits import wait_until
from srm_local.tools import run_tool

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 3
PER_PARTITION = 200


def _config(  # type: ignore[no-untyped-def]
    kafka, tmp_path: Path, topic: str, group_prefix: str, *, sync: bool, control_prefix: str = ""
) -> Path:
    keys = {
        "enabled": True,
        "topics": [topic],
        "groups": [f"{group_prefix}.*"],
        "emit.checkpoints.interval.seconds": 1,
        "refresh.groups.interval.seconds": 1,
        "sync.group.offsets.enabled": sync,
        "sync.group.offsets.interval.seconds": 1,
    }
    return write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": keys,
            "backup->primary": {"enabled": False, "emit.heartbeats.enabled": False},
        },
        replication={
            "emit.heartbeats.enabled": False,
            "refresh.topics.interval.seconds": 1,
            **({"srm.control.topic.prefix": control_prefix} if control_prefix else {}),
        },
    )


def _control(config: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = control_cli.main(["--config", str(config), *args])
    return code, out.getvalue(), err.getvalue()


def _start(kafka, run_driver, tmp_path, unique_name, *, sync: bool, codec: str = "none"):  # type: ignore[no-untyped-def]
    topic = kafka.create_topic("primary", unique_name("orders"), partitions=PARTITIONS)
    kafka.created.append(("backup", f"primary.{topic}"))
    numbered = produce_numbered(
        kafka["primary"],
        topic,
        partitions=PARTITIONS,
        per_partition=PER_PARTITION,
        abort_every=3,
        codec=codec,
    )
    group = unique_name("app")
    config = _config(kafka, tmp_path, topic, group, sync=sync)
    driver = run_driver(config)
    wait_until(
        lambda: copied(kafka["primary"], topic, kafka["backup"], f"primary.{topic}"),
        90,
        f"{topic} is copied",
        step=0.5,
    )
    return topic, numbered, group, config, driver


def _group_status(driver, group: str) -> dict:  # type: ignore[no-untyped-def,type-arg]
    (task,) = [t for t in driver.status()["tasks"] if t["kind"] == "checkpoint"]
    return task["groups"][group]


def _checkpointed(kafka, group: str, commits: dict) -> bool:  # type: ignore[no-untyped-def]
    """The checkpoints on backup name every commit of the group on primary."""
    found: dict[tuple[str, int], int] = {}
    for records in consume_all(kafka["backup"], "primary.checkpoints.internal").values():
        for record in records:
            checkpoint = Checkpoint.decode(record.key, record.value)
            if checkpoint.consumer_group_id == group:
                found[(checkpoint.topic, checkpoint.partition)] = checkpoint.upstream_offset
    return {(f"primary.{t}", p): o for (t, p), o in commits.items()} == found


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_failover_and_failback_commands_skip_nothing_and_read_nothing_twice(
    kafka, run_driver, tmp_path, unique_name, codec
):  # type: ignore[no-untyped-def]
    topic, numbered, group, config, driver = _start(
        kafka, run_driver, tmp_path, unique_name, sync=False, codec=codec
    )
    copied = log_batches(kafka["backup"], f"primary.{topic}")
    assert data_codecs(copied, WORTH_COMPRESSING) == {codec}
    ledger = Ledger(numbered.ids)
    first = ledger.read(consume(kafka["primary"], [topic], group, 250), "primary")
    commits = group_offsets(kafka["primary"], group)
    assert first.read == 250 and commits

    # The checkpoint task translates the commits (the export is what SRM users apply).
    wait_until(lambda: _checkpointed(kafka, group, commits), 60, "checkpoints written")
    code, csv, err = _control(
        config, "offsets", "--source", "primary", "--target", "backup", "--group", group, "--export"
    )
    assert code == 0, err
    rows = sorted(line.split(",") for line in csv.split())
    assert [(t, int(p)) for t, p, _ in rows] == sorted((f"primary.{topic}", p) for _, p in commits)

    code, out, err = _control(
        config, "failover", "--group", group, "--from", "primary", "--to", "backup"
    )
    assert code == 0, f"{out}\n{err}"
    print(out)
    on_backup = group_offsets(kafka["backup"], group)
    exported = {(t, int(p)): int(o) for t, p, o in rows}
    assert on_backup == exported, "the command and the checkpoints agree"
    second = ledger.read(
        consume(kafka["backup"], [f"primary.{topic}"], group, 200), "backup after failover"
    )

    code, out, err = _control(
        config, "failback", "--group", group, "--from", "backup", "--to", "primary"
    )
    assert code == 0, f"{out}\n{err}"
    print(out)
    third = ledger.read(consume(kafka["primary"], [topic], group), "primary after failback")
    driver.stop()

    total = ledger.tally()
    print(f"{first}\n{second}\n{third}\n{total}")
    assert (second.read, third.read) == (200, numbered.committed_count - 450)
    assert total.skipped == () and total.read_twice == () and total.not_reached == 0, str(total)


def test_automatic_group_offset_sync_then_failback(kafka, run_driver, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    topic, numbered, group, config, driver = _start(
        kafka, run_driver, tmp_path, unique_name, sync=True
    )
    ledger = Ledger(numbered.ids)
    first = ledger.read(consume(kafka["primary"], [topic], group, 301), "primary")
    commits = group_offsets(kafka["primary"], group)
    remote = f"primary.{topic}"

    # Nothing done by hand: the checkpoint task syncs the group on backup.
    def synced() -> bool:
        return _checkpointed(kafka, group, commits) and len(
            group_offsets(kafka["backup"], group)
        ) == len(commits)

    wait_until(synced, 60, "the group's offsets synced to backup", step=0.5)
    assert _group_status(driver, group)["untranslated"] == {}
    assert _group_status(driver, group)["group_offset_sync"].startswith("set")

    # A group that is active on backup is never touched by the sync.
    second = ledger.read(consume(kafka["backup"], [remote], group, 150), "backup (synced)")
    before = group_offsets(kafka["backup"], group)
    # ...and one that moved on there is never moved back by the next rounds.
    wait_until(
        lambda: "already at or past" in str(_group_status(driver, group)["group_offset_sync"]),
        30,
        "the sync leaves the moved group alone",
    )
    assert group_offsets(kafka["backup"], group) == before

    code, out, err = _control(
        config, "failback", "--group", group, "--from", "backup", "--to", "primary"
    )
    assert code == 0, f"{out}\n{err}"
    third = ledger.read(consume(kafka["primary"], [topic], group), "primary after failback")
    driver.stop()
    total = ledger.tally()
    print(f"{first}\n{second}\n{third}\n{total}")
    assert total.skipped == () and total.read_twice == () and total.not_reached == 0, str(total)


def test_exported_offsets_apply_with_kafka_consumer_groups(
    kafka, run_driver, tmp_path, unique_name, java_client
):  # type: ignore[no-untyped-def]
    topic, numbered, group, config, driver = _start(
        kafka, run_driver, tmp_path, unique_name, sync=False
    )
    ledger = Ledger(numbered.ids)
    ledger.read(consume(kafka["primary"], [topic], group, 222), "primary")
    commits = group_offsets(kafka["primary"], group)
    wait_until(lambda: _checkpointed(kafka, group, commits), 60, "checkpoints written")
    driver.stop()
    code, csv, err = _control(
        config, "offsets", "--source", "primary", "--target", "backup", "--group", group, "--export"
    )
    assert code == 0, err
    expected = {(t, int(p)): int(o) for t, p, o in (line.split(",") for line in csv.split())}
    # MM2's own client reads the checkpoints our driver wrote and finds the same offsets.
    java = java_client(
        {
            "properties": {"bootstrap.servers": kafka["backup"]},
            "hops": [],
            "sources": [],
            "translate": [{"remote_alias": "primary", "group": group}],
        }
    )
    (answer,) = java["translate_offsets"]  # type: ignore[misc]
    assert {(o["topic"], o["partition"]): o["offset"] for o in answer["offsets"]} == expected

    # The primary site is gone: failover falls back to the checkpoints on backup.
    dead = tmp_path / "primary-down"
    dead.mkdir()
    down = write_config(
        dead,
        {"primary": "127.0.0.1:1", "backup": kafka["backup"]},
        flows={"primary->backup": {"enabled": True, "topics": [topic]}},
    )
    code, out, err = _control(
        down, "failover", "--group", group, "--from", "primary", "--to", "backup"
    )
    assert code == 0 and "using the last checkpoints on backup" in err, f"{out}\n{err}"
    assert group_offsets(kafka["backup"], group) == expected

    # Then the SRM way, with Kafka's own tool: back to the start, then the exported file.
    reset = ["--bootstrap-server", kafka["backup"], "--reset-offsets", "--group", group]
    run_tool("kafka-consumer-groups", [*reset, "--all-topics", "--to-earliest", "--execute"])
    assert set(group_offsets(kafka["backup"], group).values()) == {0}
    plan = tmp_path / "offsets.csv"
    plan.write_text(csv)
    result = run_tool(
        "kafka-consumer-groups",
        [
            "--bootstrap-server",
            kafka["backup"],
            "--reset-offsets",
            "--group",
            group,
            "--from-file",
            str(plan),
            "--execute",
        ],
    )
    print(result.stdout)
    assert group_offsets(kafka["backup"], group) == expected
    rest = ledger.read(consume(kafka["backup"], [f"primary.{topic}"], group), "backup")
    total = ledger.tally()
    assert rest.read == numbered.committed_count - 222
    assert total.skipped == () and total.read_twice == () and total.not_reached == 0, str(total)


def test_under_a_coordinator_a_groups_commits_appear_translated_on_backup(
    kafka, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    """The coordinated path (coordinator process, driver process): the leader discovers
    the group, plans and assigns the checkpoint task, the driver runs it and syncs the
    group; nothing is done by hand."""
    topic = kafka.create_topic("primary", unique_name("orders"), partitions=PARTITIONS)
    kafka.created.append(("backup", f"primary.{topic}"))
    numbered = produce_numbered(
        kafka["primary"], topic, partitions=PARTITIONS, per_partition=100, abort_every=3
    )
    group = unique_name("app")
    config = _config(kafka, tmp_path, topic, group, sync=True, control_prefix=unique_name("cg"))
    coordinator = CoordinatorProcess(
        config, tmp_path / "coordinator.log", "c1", "--projection", "none"
    )
    driver = DriverProcess(
        config, tmp_path / "driver.log", spark_master="local[1]", args=["--id", "d1"]
    )

    logs = log_tails((coordinator, driver))

    try:
        coordinator.start()
        driver.start()
        wait_until(
            lambda: copied(kafka["primary"], topic, kafka["backup"], f"primary.{topic}"),
            180,
            "the topic is copied",
            detail=logs,
        )
        ledger = Ledger(numbered.ids)
        ledger.read(consume(kafka["primary"], [topic], group, 120), "primary")
        commits = group_offsets(kafka["primary"], group)
        started = time.monotonic()
        wait_until(
            lambda: len(group_offsets(kafka["backup"], group)) == len(commits),
            90,
            "the group's offsets appear on backup",
            detail=logs,
        )
        print(f"\ntranslated offsets on backup {time.monotonic() - started:.1f} s after the commit")
        ledger.read(consume(kafka["backup"], [f"primary.{topic}"], group), "backup")
        total = ledger.tally()
        print(total)
        assert total.skipped == () and total.read_twice == () and total.not_reached == 0, str(total)
    finally:
        driver.stop()
        coordinator.stop()
