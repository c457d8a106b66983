"""What a driver says in its goodbye: after a clean shutdown nothing is reported running,
so the leader moves its tasks without waiting them out (fakes, no Kafka or Spark)."""

from __future__ import annotations

import threading

from srm_common.config import parse_yaml_text
from srm_common.control.task_ids import checkpoint_task_id, heartbeat_task_id
from srm_common.domain.tasks import CheckpointTask
from srm_driver.runtime import DriverRuntime
from srm_driver.task_thread import TaskThread
from srm_driver.tasks import Assignment
from srm_driver.testing import IdleCopy, QuietSource

CONFIG = parse_yaml_text(
    "clusters:\n  primary: {bootstrap.servers: 'p:9'}\n  backup: {bootstrap.servers: 'b:9'}\n"
    "flows:\n  primary->backup: {enabled: true}\n"
)
FLOW = "primary->backup"


class Idle(TaskThread):
    """A task thread that waits until stopped; ``stuck`` ones ignore the stop."""

    def __init__(self, name: str, stop: threading.Event, stuck: threading.Event | None) -> None:
        super().__init__(name, stop)
        self.stuck = stuck
        self.task = None

    def run(self) -> None:
        if self.stuck is not None:
            self.stuck.wait(30)
        while not self.done():
            self.pause(0.05)


def runtime(stuck: threading.Event | None = None) -> DriverRuntime:
    return DriverRuntime(
        source=QuietSource(),  # type: ignore[arg-type]
        copy=IdleCopy(),  # type: ignore[arg-type]
        flow_topics=lambda flow: None,  # type: ignore[arg-type,return-value]
        heartbeat=lambda flow, stop: Idle(f"hb {flow.name}", stop, stuck),  # type: ignore[arg-type,return-value]
        checkpoints=lambda task_id, flow, task, stop: Idle(task_id, stop, None),  # type: ignore[arg-type,return-value]
    )


def assign(r: DriverRuntime) -> None:
    flow = CONFIG.flow("primary", "backup")
    task = CheckpointTask(FLOW, 0, ("g",))
    r._apply(  # noqa: SLF001 - one pass of the loop
        Assignment(
            generation=1,
            flows={FLOW: flow},
            heartbeats=frozenset({FLOW}),
            checkpoints={checkpoint_task_id(FLOW, 0): task},
        )
    )


def test_after_a_clean_shutdown_nothing_is_reported_running() -> None:
    r = runtime()
    assign(r)
    assert len(r.report()[1]) == 2
    r.shutdown(1)
    assert r.report()[1] == frozenset()


def test_a_task_thread_stuck_at_shutdown_stays_reported_running() -> None:
    stuck = threading.Event()
    r = runtime(stuck)
    assign(r)
    r.shutdown(1)  # the heartbeat thread ignores the stop for now
    assert r.report()[1] == frozenset({heartbeat_task_id(FLOW)})
    stuck.set()
