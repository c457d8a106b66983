"""A stack of the release with one event log starts with per-target logs as it is: its
allow and deny lists, halts, resumes and history survive, and the move is in the audit.

The old log is written as that release wrote it (its bytes: ``log.started`` v1, the
leader's term, the file's baseline, srm-control's changes, a halt and a resume) to
``<prefix>.events.internal`` on ``srm.control.cluster`` (``primary``, the first alias).
Then a coordinator of this release starts: each target's first leader finds its log
empty, moves the configuration of its flows from the old log and marks it moved there.
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Producer
from srm_common.adapters.control_topics import ensure_control_topics
from srm_common.adapters.event_log_reads import read_log
from srm_common.config import load_config
from srm_common.config.control import control_plane
from srm_common.control.events import (
    ConfigApplied,
    CoordinatorElected,
    Envelope,
    FlowBaseline,
    FlowDisabled,
    FlowEnabled,
    LogMigrated,
    PartitionHalted,
    PartitionResumeRequested,
    TopicsAllowed,
    TopicsDenied,
    encode,
)
from srm_control import cli as control_cli
from srm_harness.control import control_config, control_state
from srm_harness.processes import CoordinatorProcess, log_tails
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration]

FLOW, REVERSE = "primary->backup", "backup->primary"


def _old_log(prefix: str, source: str) -> list[bytes]:
    """The record values the single-log release wrote (its ``log.started`` is v1)."""
    t0 = int(time.time() * 1000) - 3_600_000
    started = json.dumps(
        {
            "at": t0,
            "by": "coordinator c0",
            "command": None,
            "data": {"log_id": "L0", "restored_from": None, "source": ""},
            "type": "log.started",
            "version": 1,
        },
        sort_keys=True,
        separators=(",", ":"),
    ).encode()
    baseline = {
        FLOW: FlowBaseline(True, (f"{prefix}-base",), (".*[\\-\\.]internal",), (".*",), ()),
        REVERSE: FlowBaseline(False, (), (".*[\\-\\.]internal",), (".*",), ()),
    }
    events = [
        (CoordinatorElected("c0", "http://c0:1", 4), "coordinator c0"),
        (ConfigApplied(source, baseline), f"config file {source}"),
        (FlowEnabled(FLOW), f"config file {source}"),
        (TopicsAllowed(FLOW, (f"{prefix}-base",)), f"config file {source}"),
        (TopicsDenied(FLOW, (".*[\\-\\.]internal",)), f"config file {source}"),
        (FlowDisabled(REVERSE), f"config file {source}"),
        (TopicsAllowed(FLOW, (f"{prefix}-orders", f"{prefix}-pay.*")), "alice@h via srm-control"),
        (TopicsDenied(FLOW, (f"{prefix}-pay\\.tmp",)), "alice@h via srm-control"),
        (TopicsAllowed(REVERSE, (f"{prefix}-billing",)), "bob@h via srm-control"),
        (PartitionHalted(FLOW, f"{prefix}-orders", 3, "conflict", "not ours", "d1"), "driver d1"),
        (PartitionHalted(FLOW, f"{prefix}-orders", 4, "truncated", "end below", "d1"), "driver d1"),
        (
            PartitionResumeRequested(FLOW, f"{prefix}-orders", 4, "copy-end", None, "r-7"),
            "alice@h via srm-control",
        ),
    ]
    return [started] + [
        encode(Envelope(event, t0 + 1000 * (i + 1), by)) for i, (event, by) in enumerate(events)
    ]


def test_a_stack_of_the_single_log_release_keeps_its_lists_halts_and_history(  # type: ignore[no-untyped-def]
    kafka, tmp_path, unique_name, capsys
):
    prefix = unique_name("upgrade")
    config = control_config(tmp_path, kafka.bootstrap, prefix)
    plane = control_plane(load_config(config))
    legacy = plane.legacy
    assert (legacy.cluster, legacy.events_topic) == ("primary", f"{prefix}.events.internal")
    for alias in ("primary", "backup"):
        for name in ("events", "drivers", "election", "log", "beats", "leader"):
            kafka.created.append((alias, f"{prefix}.{name}.internal"))
    ensure_control_topics(legacy)  # as the old coordinators made it
    producer = Producer({"bootstrap.servers": kafka["primary"], "enable.idempotence": True})
    for value in _old_log(prefix, str(config)):
        producer.produce(legacy.events_topic, value=value)
    assert producer.flush(30) == 0

    coordinator = CoordinatorProcess(config, tmp_path / "c1.log", "c1")
    logs = log_tails([coordinator])
    try:
        coordinator.start()
        started = time.monotonic()
        wait_until(
            lambda: (
                {
                    e.event.target
                    for e in read_log(legacy, timeout=15)
                    if isinstance(e.event, LogMigrated)
                }
                == {"primary", "backup"}
            ),
            90,
            "both targets' flows moved, and the old log says so",
            detail=logs,
        )
        moved_in = time.monotonic() - started
        backup = control_state(config, "backup")
        primary = control_state(config, "primary")
    finally:
        if coordinator.alive():
            coordinator.kill9()

    flow = backup.flow(FLOW)
    assert flow.enabled
    assert flow.topics == (f"{prefix}-base", f"{prefix}-orders", f"{prefix}-pay.*"), "lists"
    assert flow.topics_exclude == (".*[\\-\\.]internal", f"{prefix}-pay\\.tmp")
    assert {(h.partition, h.kind) for h in backup.halts.values()} == {(3, "conflict")}
    assert [(r.partition, r.mode, r.request_id) for r in backup.resumes.values()] == [
        (4, "copy-end", "r-7")
    ], "the resume superseded the halt of partition 4, as in the old log"
    assert FLOW not in primary.flows and not primary.halts, "primary's log: its own flows"
    assert primary.flow(REVERSE).topics == (f"{prefix}-billing",)
    assert backup.target == "backup" and primary.target == "primary"
    assert backup.config_path == str(config) and FLOW in backup.baseline

    # srm-control shows the lists and the halt; the audit shows the old history, the move
    # and the new logs, each entry naming its log.
    code = control_cli.main(
        ["--config", str(config), "topics", "--source", "primary", "--target", "backup", "--list"]
    )
    listed = capsys.readouterr().out
    assert code == 0 and f"{prefix}-pay.*" in listed and f"{prefix}-pay\\.tmp" in listed
    code = control_cli.main(
        [
            "--config",
            str(config),
            "partitions",
            "--source",
            "primary",
            "--target",
            "backup",
            "--list",
        ]
    )
    halted = capsys.readouterr().out
    assert code == 0 and f"{prefix}-orders:3  conflict" in halted
    code = control_cli.main(["--config", str(config), "audit", "--json"])
    trail = json.loads(capsys.readouterr().out)
    assert code == 0
    by_log = {row["log"] for row in trail}
    assert by_log == {"legacy@primary", "backup", "primary"}, by_log
    moves = [row for row in trail if row["type"] == "log.migrated"]
    assert {row["log"] for row in moves} == {"legacy@primary"} and len(moves) == 2
    starts = [
        row for row in trail if row["type"] == "log.started" and row["log"] != "legacy@primary"
    ]
    assert all("migrated from log L0" in row["change"] for row in starts), starts
    assert all(row["by"] == "coordinator c1 (migration)" for row in starts)
    old = [
        row for row in trail if row["log"] == "legacy@primary" and "alice@h" in (row["by"] or "")
    ]
    assert len(old) == 3, "srm-control's changes of the old log stay in the history"
    with capsys.disabled():
        print(
            f"\nupgrade from the single log: both targets' logs started from it {moved_in:.1f} s"
            f" after the coordinator started; {len(trail)} audit entries over 3 logs"
        )
