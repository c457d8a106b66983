"""The per-flow status answer: every task a driver holds says since when it holds it."""

from __future__ import annotations

from types import SimpleNamespace

from srm_common.control.task_ids import checkpoint_task_id, heartbeat_task_id
from srm_common.domain.tasks import CheckpointTask, SourceTask
from srm_driver.checkpoints import GroupStatus
from srm_driver.rest import flow_leases, flow_status
from srm_driver.tasks import Assignment

FLOW = "primary->backup"


def test_every_kind_of_task_reports_since_when_it_is_held() -> None:
    copying = SourceTask(FLOW, 0, (("orders", 0),))
    starting = SourceTask(FLOW, 1, (("orders", 1),))
    checkpoint, heartbeat = checkpoint_task_id(FLOW, 0), heartbeat_task_id(FLOW)
    other = SourceTask("backup->primary", 0, (("x", 0),))
    assignment = Assignment(
        generation=7,
        flows={},
        source={FLOW: (copying, starting), "backup->primary": (other,)},
        heartbeats=frozenset({FLOW}),
        checkpoints={checkpoint: CheckpointTask(FLOW, 0, ("billing",))},
    )
    copy = SimpleNamespace(
        held=lambda flow: frozenset({("orders", 0)}) if flow == FLOW else frozenset(),
        status=lambda flow: {"partitions": 2},
    )
    runtime = SimpleNamespace(
        assignment=assignment,
        copy=copy,
        generation=7,
        held_since={copying.name: 100.0, checkpoint: 200.5, heartbeat: 300.25},
        acl_syncs={},
        checkpoint_runners={
            checkpoint: (
                None,
                SimpleNamespace(
                    task=SimpleNamespace(
                        status={"billing": GroupStatus(untranslated={"orders-1": "no sync"})}
                    )
                ),
            )
        },
    )
    source = SimpleNamespace(lease_ms=lambda flow: 4000 if flow == FLOW else 0)
    driver = SimpleNamespace(
        runtime=runtime, source=source, settings=SimpleNamespace(driver_id="d1")
    )

    answer = flow_status(driver, FLOW)  # type: ignore[arg-type]

    tasks = {t["id"]: t for t in answer["tasks"]}  # type: ignore[attr-defined]
    assert set(tasks) == {copying.name, starting.name, checkpoint, heartbeat}
    assert (tasks[copying.name]["state"], tasks[copying.name]["since_ms"]) == ("RUNNING", 100_000)
    assert (tasks[starting.name]["state"], tasks[starting.name]["since_ms"]) == ("STARTING", None)
    assert (tasks[checkpoint]["state"], tasks[checkpoint]["since_ms"]) == ("RUNNING", 200_500)
    assert tasks[checkpoint]["groups"]["billing"]["untranslated"] == {"orders-1": "no sync"}
    assert (tasks[heartbeat]["state"], tasks[heartbeat]["since_ms"]) == ("RUNNING", 300_250)
    assert answer["generation"] == 7 and answer["copy"] == {"partitions": 2}
    assert answer["lease_ms"] == 4000, "the lease of this flow, not of another"
    assert answer["acl_sync"] is None, "the ACL sync job of the flow runs on another driver"


def test_the_driver_shows_the_lease_of_each_flow_it_copies() -> None:
    assignment = Assignment(
        generation=1,
        flows={},
        source={FLOW: (SourceTask(FLOW, 0, (("orders", 0),)),), "backup->primary": ()},
    )
    flows = {FLOW: SimpleNamespace(name=FLOW), "primary->dr": SimpleNamespace(name="primary->dr")}
    driver = SimpleNamespace(
        runtime=SimpleNamespace(assignment=assignment),
        source=SimpleNamespace(lease_ms=lambda flow: 4000 if flow == FLOW else 0),
        settings=SimpleNamespace(flows=flows),
    )
    assert flow_leases(driver) == {FLOW: 4000}  # type: ignore[arg-type]
    driver.runtime.assignment = None  # copying nothing: every flow it serves
    assert flow_leases(driver) == {FLOW: 4000, "primary->dr": 0}  # type: ignore[arg-type]
