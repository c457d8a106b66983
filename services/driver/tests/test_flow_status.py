"""The per-flow status answer: every task a driver holds says since when it holds it."""

from __future__ import annotations

from types import SimpleNamespace

from srm_common.control.state import checkpoint_task_id, heartbeat_task_id, source_task_id
from srm_driver.coordinated import flow_status

FLOW = "primary->backup"


def _driver(
    tasks: list[str], *, running: set[str], since: dict[str, float], held: dict[str, float]
):  # type: ignore[no-untyped-def]
    state = SimpleNamespace(tasks_of=lambda driver_id: tasks if driver_id == "d1" else [])
    worker = SimpleNamespace(running_tasks=frozenset(running), task_since=since, status=None)
    return SimpleNamespace(
        link=SimpleNamespace(state=state),
        driver_id="d1",
        generation=7,
        flow_workers={FLOW: worker},
        held_since=held,
    )


def test_every_kind_of_task_reports_since_when_it_is_held() -> None:
    source, starting = source_task_id(FLOW, 0), source_task_id(FLOW, 1)
    checkpoint, heartbeat = checkpoint_task_id(FLOW, 0), heartbeat_task_id(FLOW)
    driver = _driver(
        [source, starting, checkpoint, heartbeat, source_task_id("backup->primary", 0)],
        running={source},
        since={source: 100.0},
        held={checkpoint: 200.5, heartbeat: 300.25},
    )

    answer = flow_status(driver, FLOW)  # type: ignore[arg-type]

    tasks = {t["id"]: t for t in answer["tasks"]}  # type: ignore[attr-defined]
    assert set(tasks) == {source, starting, checkpoint, heartbeat}
    assert (tasks[source]["state"], tasks[source]["since_ms"]) == ("RUNNING", 100_000)
    assert (tasks[starting]["state"], tasks[starting]["since_ms"]) == ("STARTING", None)
    assert (tasks[checkpoint]["state"], tasks[checkpoint]["since_ms"]) == ("ASSIGNED", 200_500)
    assert (tasks[heartbeat]["state"], tasks[heartbeat]["since_ms"]) == ("RUNNING", 300_250)
    assert answer["generation"] == 7 and answer["copy"] is None
