"""Where a driver's work comes from: the port between the runtime and a task source.

Two sources implement it: :class:`srm_driver.static_tasks.StaticTaskSource` (``--standalone``:
every task of every enabled flow of the configuration) and
:class:`srm_driver.coordinated_tasks.CoordinatedTaskSource` (the tasks the coordinator
assigns this driver in the event log). The runtime does not know which it has.

A coordinated driver can do more than run tasks: say how it reads each log, show a
flow's task configs from its log, ask the leader to look at a flow's source now. That is
the :class:`Coordination` port, which the composition root hands the REST API (None for
a standalone driver), so nothing else asks which source it has.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from srm_common.config.model import FlowConfig
from srm_common.control.state import ControlState
from srm_common.domain.tasks import CheckpointTask, SourceTask

from srm_driver.copying.ports import CopyEvent
from srm_driver.copying.state import ResumeRequest

TopicPartition = tuple[str, int]
# What the runtime runs now: (assignment generation applied, task ids running).
Report = Callable[[], tuple[int, frozenset[str]]]


@dataclass(frozen=True)
class Assignment:
    """The work given to this driver at assignment ``generation``.

    ``flows``: every flow as the source says it is now (the event log's lists override
    the file's); ``source``: source tasks per flow; ``heartbeats``: flows whose heartbeat
    task runs here; ``checkpoints``: checkpoint tasks held here, by task id; ``resumes``: operator
    resumes of halted partitions (flow, topic, partition) the source knows of.
    """

    generation: int
    flows: Mapping[str, FlowConfig]
    source: Mapping[str, tuple[SourceTask, ...]] = field(default_factory=dict)
    heartbeats: frozenset[str] = frozenset()
    checkpoints: Mapping[str, CheckpointTask] = field(default_factory=dict)
    resumes: Mapping[tuple[str, str, int], ResumeRequest] = field(default_factory=dict)


class TaskSource(Protocol):
    """A source of assignments, leases and a way to tell someone about copy events."""

    changed: threading.Event

    def start(self, url: str, report: Report) -> None:
        """Start following; ``url`` is this driver's REST address."""

    def assignment(self) -> Assignment | None:
        """The current assignment; None until there is one."""

    def lease_ms(self, flow: str) -> int:
        """How long records of ``flow`` may still be written on this driver's behalf, in
        milliseconds (0: not now). Held per flow: a driver may keep writing into one target
        cluster while it cannot confirm its right to write into another."""

    def lease_held_since(self, flow: str) -> float | None:
        """Since when (``time.monotonic``) the lease of ``flow`` has been held without a
        gap, so nobody else was given its partitions meanwhile; None: not held now."""

    def publish(self, event: CopyEvent) -> None:
        """Tell the operators' side about a halt or a loss (never blocks for long)."""

    def resume(self, flow: str, key: TopicPartition, request: ResumeRequest) -> str:
        """Ask to resume a halted partition; what happened, in words."""

    def fatal(self) -> str | None:
        """Why this driver must stop (its id was taken by another process), else None."""

    def close(self) -> None: ...


class Coordination(Protocol):
    """What a driver that follows the coordinators' event logs offers besides its tasks
    (:class:`srm_driver.coordinated_tasks.CoordinatedTaskSource`)."""

    def log_status(self) -> dict[str, object] | None:
        """Each served log as this driver reads it, by target (None before it starts)."""

    def state_of(self, target: str) -> ControlState:
        """The folded state of ``target``'s log as this driver reads it."""

    def notify_leader(self, name: str, reason: str) -> bool:
        """Ask the leader of flow ``name``'s log to rediscover it; False if none answered."""
