"""What an operator sees and does when a partition cannot be copied without guessing: the
halt in the event log and `srm-control partitions --list`, an audited resume from an
explicit choice, and records lost to retention before they were copied."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from srm_common.control.events import PartitionHalted, PartitionResumeRequested, RecordsLost
from srm_harness.clients import admin, consume_all, end_offsets, produce
from srm_harness.control import ControlGroup, write_config
from srm_harness.processes import CoordinatorProcess, DriverProcess, log_tails
from srm_harness.records import Record
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _control(config, *args: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """`srm-control` as an operator runs it: its own process, its exit code, its output."""
    command = Path(sys.executable).parent / "srm-control"
    return subprocess.run(
        [str(command), "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_halted_partition_is_listed_resumed_from_an_explicit_choice_and_audited(
    kafka, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    foreign = kafka.create_topic("primary", unique_name("foreign"), partitions=1)
    lossy = kafka.create_topic("primary", unique_name("lossy"), partitions=1)
    # Someone else already wrote to the remote partition: nothing records those records.
    remote = kafka.create_topic("backup", f"primary.{foreign}", partitions=1)
    produce(kafka["backup"], remote, [Record(b"stranger", b"x", (), None, 0)])
    kafka.created.append(("backup", f"primary.{lossy}"))
    produce(
        kafka["primary"], foreign, [Record(f"f{i}".encode(), b"v", (), None, 0) for i in range(5)]
    )
    produce(
        kafka["primary"], lossy, [Record(f"a{i}".encode(), b"v", (), None, 0) for i in range(10)]
    )
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {"enabled": True, "topics": [foreign, lossy], "groups": []},
            "backup->primary": {"enabled": False},
        },
        replication={"srm.control.topic.prefix": unique_name("ops")},
    )
    group = ControlGroup(config)
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
            lambda: any(h.topic == foreign for h in group.state().halts.values()),
            180,
            "the partition with foreign records halts, in the event log",
            detail=logs,
        )
        wait_until(
            lambda: end_offsets(kafka["backup"], f"primary.{lossy}") == {0: 10},
            60,
            "the other topic copies",
            detail=logs,
        )
        listed = _control(
            config, "partitions", "--source", "primary", "--target", "backup", "--list"
        )
        assert listed.returncode == 0, listed.stderr
        assert (
            f"{foreign}:0  conflict" in listed.stdout and "no progress is recorded" in listed.stdout
        )
        print(f"\n{listed.stdout}")

        refused = _control(
            config, "partitions", "--source", "primary", "--target", "backup",
            "--resume", f"{lossy}:0", "--from", "copy-end",
        )  # fmt: skip
        assert refused.returncode == 1 and "is not halted, nothing to resume" in refused.stderr

        resumed = _control(
            config, "partitions", "--source", "primary", "--target", "backup",
            "--resume", f"{foreign}:0", "--from", "source-start",
        )  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr
        wait_until(
            lambda: end_offsets(kafka["backup"], remote) == {0: 6},
            60,
            "the resumed partition copies after the foreign record",
            detail=logs,
        )
        copies = consume_all(kafka["backup"], remote)[0]
        assert [r.key for r in copies] == [b"stranger", *(f"f{i}".encode() for i in range(5))]

        # Records lost to retention while the driver is down: counted, recorded.
        assert driver.stop() == 0
        produce(
            kafka["primary"],
            lossy,
            [Record(f"b{i}".encode(), b"v", (), None, 0) for i in range(20)],
        )
        handle = admin(kafka["primary"])
        for future in handle.delete_records([TopicPartition(lossy, 0, 25)]).values():
            future.result(30)
        driver.start()
        wait_until(
            lambda: any(isinstance(e, RecordsLost) for e in group.events()),
            120,
            "the loss is recorded",
            detail=logs,
        )
        wait_until(
            lambda: end_offsets(kafka["backup"], f"primary.{lossy}") == {0: 15},
            60,
            "the copy goes on from the log start",
            detail=logs,
        )
        listed = _control(
            config, "partitions", "--source", "primary", "--target", "backup", "--list"
        )
        assert f"{lossy}:0  15 offsets" in listed.stdout
        print(listed.stdout)
        audit = _control(config, "audit", "--flow", "primary->backup")
        assert "halted on driver d1 (conflict)" in audit.stdout
        assert "resume from source-start requested" in audit.stdout
        assert "retention deleted source offsets 10..24" in audit.stdout
        assert driver.stop() == 0
    finally:
        for process in (driver, coordinator):
            if process.alive():
                process.kill9()
    kinds = [type(e) for e in group.events()]
    assert kinds.count(PartitionHalted) == 1 and kinds.count(PartitionResumeRequested) == 1
