"""The records a :class:`srm_common.control.state.ControlState` holds per flow: its
switch and pattern lists as commands left them (:class:`FlowState`) and its task configs
(:class:`FlowTasks`, recorded by :mod:`srm_common.control.task_configs`' events).
:meth:`FlowTasks.to_json` feeds the state's digest, so its shape changes only with one."""

from __future__ import annotations

from dataclasses import dataclass

from srm_common.control.schema import TaskConfigsGenerated, TaskConfigsPart
from srm_common.control.task_configs import assemble, task_config_events
from srm_common.control.task_ids import checkpoint_task_id, heartbeat_task_id, source_task_id
from srm_common.domain.tasks import CheckpointTask, SourceTask


@dataclass(frozen=True, slots=True)
class FlowState:
    """A flow's switch and lists as the log says now; patterns in the order they were
    added, without duplicates."""

    enabled: bool = False
    topics: tuple[str, ...] = ()
    topics_exclude: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    groups_exclude: tuple[str, ...] = ()

    def patterns(self, list_field: str) -> tuple[str, ...]:
        """One list by field name (``topics``, ``topics_exclude``, ``groups``...)."""
        return tuple(getattr(self, list_field))


@dataclass(frozen=True, slots=True)
class FlowTasks:
    """The task configs of one flow at task config generation ``generation``."""

    flow: str
    generation: int
    source: tuple[SourceTask, ...]
    checkpoint: tuple[CheckpointTask, ...]
    heartbeat: bool

    def task_ids(self) -> tuple[str, ...]:
        """Source task ids, then checkpoint task ids, then the heartbeat task id."""
        ids = [source_task_id(self.flow, task.index) for task in self.source]
        ids += [checkpoint_task_id(self.flow, task.index) for task in self.checkpoint]
        return (*ids, heartbeat_task_id(self.flow)) if self.heartbeat else tuple(ids)

    def to_events(self) -> list[TaskConfigsPart | TaskConfigsGenerated]:
        """The events that record these task configs (parts, then the last one), each of
        bounded size (:mod:`srm_common.control.task_configs`)."""
        return task_config_events(
            self.flow,
            self.generation,
            tuple(task.partitions for task in self.source),
            tuple(task.groups for task in self.checkpoint),
            self.heartbeat,
        )

    def to_json(self) -> dict[str, object]:
        """Plain JSON values: every task's partitions and groups (for ``audit --at`` and
        the digest, in the shape v1 events had, so digests did not change)."""
        return {
            "flow": self.flow,
            "generation": self.generation,
            "source": [[list(tp) for tp in task.partitions] for task in self.source],
            "checkpoint": [list(task.groups) for task in self.checkpoint],
            "heartbeat": self.heartbeat,
        }

    @classmethod
    def from_events(
        cls, event: TaskConfigsGenerated, parts: tuple[TaskConfigsPart, ...] = ()
    ) -> FlowTasks | None:
        """The task configs ``event`` completes with ``parts``; None if parts are missing."""
        assembled = assemble(event, parts)
        if assembled is None:
            return None
        source, checkpoint = assembled
        flow = event.flow
        return cls(
            flow,
            event.generation,
            tuple(SourceTask(flow, i, owned) for i, owned in enumerate(source)),
            tuple(CheckpointTask(flow, i, groups) for i, groups in enumerate(checkpoint)),
            event.heartbeat,
        )
