"""What the driver's heartbeat says it runs (every second, per log served): the tasks of
the partitions it holds, worked out again only when those or their tasks changed (fakes,
no Kafka or Spark)."""

from __future__ import annotations

from srm_common.config import parse_yaml_text
from srm_common.domain.tasks import SourceTask
from srm_driver.runtime import DriverRuntime
from srm_driver.tasks import Assignment
from srm_driver.testing import IdleCopy, QuietSource

CONFIG = parse_yaml_text(
    "clusters:\n  primary: {bootstrap.servers: 'p:9'}\n  backup: {bootstrap.servers: 'b:9'}\n"
    "flows:\n  primary->backup: {enabled: true}\n"
)
FLOW = "primary->backup"


class Walked(frozenset):
    """A held set that counts the walks over it."""

    walks = 0

    def __iter__(self):  # noqa: ANN204 - frozenset's
        type(self).walks += 1
        return super().__iter__()


class Holding(IdleCopy):
    def __init__(self, held: frozenset[tuple[str, int]]) -> None:
        self.now = held

    def held(self, flow: str) -> frozenset[tuple[str, int]]:
        return self.now


class Worker:
    def want(self, _owned: object) -> None: ...


def test_the_tasks_reported_are_worked_out_again_only_when_the_partitions_held_change() -> None:
    partitions = tuple(("orders", p) for p in range(3000))
    copy = Holding(Walked(partitions))
    runtime = DriverRuntime(
        source=QuietSource(),  # type: ignore[arg-type]
        copy=copy,  # type: ignore[arg-type]
        flow_topics=lambda flow: None,  # type: ignore[arg-type,return-value]
        heartbeat=lambda flow, stop: None,  # type: ignore[arg-type,return-value]
        checkpoints=lambda *_: None,  # type: ignore[arg-type,return-value]
    )
    runtime._workers[FLOW] = Worker()  # type: ignore[assignment]  # noqa: SLF001
    tasks = (
        SourceTask(FLOW, 0, partitions[:1500]),
        SourceTask(FLOW, 1, partitions[1500:]),
    )
    runtime._apply(  # noqa: SLF001 - one pass of the loop
        Assignment(
            generation=1, flows={FLOW: CONFIG.flow("primary", "backup")}, source={FLOW: tasks}
        )
    )
    walks = Walked.walks
    for _ in range(5):
        assert runtime.report()[1] == {task.name for task in tasks}
    assert Walked.walks - walks == 1, "one walk for five beats"

    copy.now = Walked(partitions[:1500])  # the second task's partitions all let go
    assert runtime.report()[1] == {tasks[0].name}
    assert Walked.walks - walks == 2
