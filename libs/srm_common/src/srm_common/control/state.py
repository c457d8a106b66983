"""The control state: a pure fold over the event log (``apply``, ``replay``).

Any coordinator, driver or ``srm-control audit --at`` rebuilds the same state by replaying
the same events; nothing here reads a clock or a broker. The fold is total: a log is
history, so an event naming an unknown driver or task is applied as written, never refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import cast

from srm_common.control.flow_records import FlowState, FlowTasks
from srm_common.control.schema import (
    AssignmentChanged,
    ConfigApplied,
    CoordinatorElected,
    DriverJoined,
    DriverLeft,
    Envelope,
    FlowBaseline,
    FlowDisabled,
    FlowEnabled,
    LogMigrated,
    LogStarted,
    PartitionHalted,
    PartitionResumeRequested,
    PatternEvent,
    RecordsLost,
    TaskConfigsGenerated,
    TaskConfigsPart,
)
from srm_common.control.state_records import (
    AppliedCommand,
    DriverInfo,
    HaltInfo,
    Leader,
    ResumeInfo,
)
from srm_common.control.task_ids import parse_task_id
from srm_common.domain.tasks import CheckpointTask, SourceTask


def partition_key(flow: str, topic: str, partition: int) -> str:
    """``primary->backup|orders|3``: one partition of one flow (topic names have no ``|``)."""
    return f"{flow}|{topic}|{partition}"


# Command ids remembered: the newest this many (ids of older commands are forgotten,
# so a retry of one of them is decided again). srm-control retries for seconds.
COMMANDS_REMEMBERED = 1000


@dataclass(frozen=True, slots=True)
class ControlState:
    """Everything the log says, as of the event at ``offset`` (appended at ``at_ms``).

    Mappings are plain dicts that :func:`apply` never mutates: treat them as read-only.
    ``assignment`` maps task id -> driver id; ``generation`` is the assignment generation.
    """

    offset: int = -1
    at_ms: int = 0
    # The log's identity (its log.started event; None in a log older than log ids), and
    # the target cluster whose flows it holds ("": the single log of earlier releases).
    log_id: str | None = None
    target: str = ""
    leader: Leader | None = None
    config_path: str | None = None
    baseline: Mapping[str, FlowBaseline] = field(default_factory=dict[str, FlowBaseline])
    flows: Mapping[str, FlowState] = field(default_factory=dict[str, FlowState])
    tasks: Mapping[str, FlowTasks] = field(default_factory=dict[str, FlowTasks])
    # Parts of a flow's task config set folded, until the event that completes it.
    task_parts: Mapping[str, tuple[TaskConfigsPart, ...]] = field(
        default_factory=dict[str, tuple[TaskConfigsPart, ...]]
    )
    drivers: Mapping[str, DriverInfo] = field(default_factory=dict[str, DriverInfo])
    assignment: Mapping[str, str] = field(default_factory=dict[str, str])
    generation: int = 0
    halts: Mapping[str, HaltInfo] = field(default_factory=dict[str, HaltInfo])
    resumes: Mapping[str, ResumeInfo] = field(default_factory=dict[str, ResumeInfo])
    # Offsets retention deleted before they were copied, per partition key: the distinct
    # [first, end) ranges reported (a range reported twice counts once).
    losses: Mapping[str, tuple[tuple[int, int], ...]] = field(
        default_factory=dict[str, tuple[tuple[int, int], ...]]
    )
    # The newest COMMANDS_REMEMBERED command ids, oldest first.
    commands: Mapping[str, AppliedCommand] = field(default_factory=dict[str, AppliedCommand])
    # In the single log of an earlier release: target -> the log its flows moved to.
    migrated: Mapping[str, str] = field(default_factory=dict[str, str])

    def lost(self, key: str) -> int:
        """Offsets of partition ``key`` lost to retention before they were copied."""
        return sum(end - first for first, end in self.losses.get(key, ()))

    def flow(self, name: str) -> FlowState:
        """The flow's state; a flow the log never mentioned is disabled with empty lists."""
        return self.flows.get(name, FlowState())

    def tasks_of(self, driver: str) -> tuple[str, ...]:
        """The task ids assigned to ``driver``, sorted."""
        return tuple(sorted(task for task, owner in self.assignment.items() if owner == driver))

    def task_owner(self, task_id: str) -> str | None:
        return self.assignment.get(task_id)

    def all_task_ids(self) -> tuple[str, ...]:
        """Every task of every flow: flows sorted, each flow's tasks in task_ids order."""
        return tuple(task for name in sorted(self.tasks) for task in self.tasks[name].task_ids())

    def source_task(self, task_id: str) -> SourceTask | None:
        """The config of source task ``task_id``; ``None`` when no such task exists."""
        tasks, index = self._find(task_id, "source")
        return tasks.source[index] if tasks and index < len(tasks.source) else None

    def checkpoint_task(self, task_id: str) -> CheckpointTask | None:
        """The config of checkpoint task ``task_id``; ``None`` when no such task exists."""
        tasks, index = self._find(task_id, "checkpoint")
        return tasks.checkpoint[index] if tasks and index < len(tasks.checkpoint) else None

    def _find(self, task_id: str, kind: str) -> tuple[FlowTasks | None, int]:
        try:
            flow, actual, index = parse_task_id(task_id)
        except ValueError:
            return None, 0
        return (self.tasks.get(flow) if actual == kind else None), index

    def to_json(self) -> dict[str, object]:
        """The whole state as plain JSON values, keys sorted (for ``audit --at``)."""
        whole = {"offset": self.offset, "at_ms": self.at_ms, **self._content()}
        return cast(dict[str, object], _sorted(whole))

    def digest(self) -> str:
        """SHA-256 hex of the state without ``offset``/``at_ms``: equal digests, equal state."""
        canonical = json.dumps(self._content(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def _content(self) -> dict[str, object]:
        return {
            "log_id": self.log_id,
            "leader": None if self.leader is None else _plain(self.leader),
            "config_path": self.config_path,
            "baseline": {name: _plain(flow) for name, flow in sorted(self.baseline.items())},
            "flows": {name: _plain(flow) for name, flow in sorted(self.flows.items())},
            "tasks": {name: t.to_json() for name, t in sorted(self.tasks.items())},
            "drivers": {name: _plain(d) for name, d in sorted(self.drivers.items())},
            "assignment": dict(sorted(self.assignment.items())),
            "generation": self.generation,
            "halts": {key: _plain(h) for key, h in sorted(self.halts.items())},
            "resumes": {key: _plain(r) for key, r in sorted(self.resumes.items())},
            "losses": {
                key: [list(r) for r in ranges] for key, ranges in sorted(self.losses.items())
            },
            "commands": {key: _plain(c) for key, c in sorted(self.commands.items())},
            # Only where there is something: the digests of earlier logs stay as they were.
            **({"target": self.target} if self.target else {}),
            **({"migrated": dict(sorted(self.migrated.items()))} if self.migrated else {}),
        } | self._parts_content()

    def _parts_content(self) -> dict[str, object]:
        """Parts of task config sets not completed yet, when there are any (so states
        without any digest as before)."""
        if not self.task_parts:
            return {}
        return {
            "task_parts": {
                flow: [[p.generation, p.part, len(p.topics), len(p.groups)] for p in parts]
                for flow, parts in sorted(self.task_parts.items())
            }
        }


def _sorted(value: object) -> object:
    if not isinstance(value, dict):
        return value
    items = cast(dict[str, object], value)
    return {key: _sorted(item) for key, item in sorted(items.items())}


def _plain(
    value: Leader
    | FlowBaseline
    | FlowState
    | TaskConfigsGenerated
    | DriverInfo
    | HaltInfo
    | ResumeInfo
    | AppliedCommand,
) -> dict[str, object]:
    def convert(item: object) -> object:
        if isinstance(item, tuple):
            return [convert(v) for v in cast(tuple[object, ...], item)]
        return item

    return {f.name: convert(getattr(value, f.name)) for f in fields(value)}


def apply(state: ControlState, envelope: Envelope) -> ControlState:
    """The state after ``envelope``: a new object; ``state`` is left as it was."""
    event = envelope.event
    state = replace(state, offset=envelope.offset, at_ms=envelope.at_ms)
    if envelope.command_id is not None:
        state = _remember(state, envelope.command_id, envelope)
    if isinstance(event, LogStarted):
        # A restored log is a new history: nothing folded before its first event counts
        # (a SQL projection replays the lost log and then the restored one).
        base = state if event.restored_from is None else ControlState(state.offset, state.at_ms)
        return replace(base, log_id=event.log_id, target=event.target)
    if isinstance(event, LogMigrated):
        return replace(state, migrated={**state.migrated, event.target: event.log_id})
    if isinstance(event, CoordinatorElected):
        leader = Leader(event.coordinator, event.url, event.epoch, envelope.at_ms)
        return replace(state, leader=leader)
    if isinstance(event, ConfigApplied):
        return replace(state, baseline=dict(event.flows), config_path=event.path)
    if isinstance(event, FlowEnabled | FlowDisabled):
        enabled = isinstance(event, FlowEnabled)
        return _with_flow(state, event.flow, replace(state.flow(event.flow), enabled=enabled))
    if isinstance(event, PatternEvent):
        flow = state.flow(event.flow)
        current = flow.patterns(event.list_field())
        if event.ADDS:
            edited = current + tuple(dict.fromkeys(p for p in event.patterns if p not in current))
        else:
            edited = tuple(p for p in current if p not in event.patterns)
        return _with_flow(state, event.flow, replace(flow, **{event.list_field(): edited}))
    if isinstance(event, TaskConfigsPart):
        pending = state.task_parts.get(event.flow, ())
        if pending and pending[0].generation != event.generation:
            pending = ()  # an earlier set never completed: its parts are history
        return replace(state, task_parts={**state.task_parts, event.flow: (*pending, event)})
    if isinstance(event, TaskConfigsGenerated):
        parts = {k: v for k, v in state.task_parts.items() if k != event.flow}
        tasks = FlowTasks.from_events(event, state.task_parts.get(event.flow, ()))
        if tasks is None:  # parts missing: the flow keeps its task configs
            return replace(state, task_parts=parts)
        alive = set(tasks.task_ids())
        assignment = {
            task: owner
            for task, owner in state.assignment.items()
            if task in alive or task.rpartition("|")[0] != event.flow
        }
        return replace(
            state,
            tasks={**state.tasks, event.flow: tasks},
            task_parts=parts,
            assignment=assignment,
        )
    if isinstance(event, DriverJoined):
        info = DriverInfo(event.driver, event.url, event.host, envelope.at_ms, event.instance)
        return replace(state, drivers={**state.drivers, event.driver: info})
    if isinstance(event, DriverLeft):
        drivers = {name: d for name, d in state.drivers.items() if name != event.driver}
        kept = {task: owner for task, owner in state.assignment.items() if owner != event.driver}
        return replace(state, drivers=drivers, assignment=kept)
    if isinstance(event, AssignmentChanged):
        revoked = set(event.revoked)
        kept = {task: owner for task, owner in state.assignment.items() if task not in revoked}
        return replace(state, generation=event.generation, assignment={**kept, **event.assigned})
    if isinstance(event, PartitionHalted):
        key = partition_key(event.flow, event.topic, event.partition)
        halt = HaltInfo(
            event.flow,
            event.topic,
            event.partition,
            event.kind,
            event.reason,
            event.driver,
            envelope.at_ms,
        )
        resumes = {k: r for k, r in state.resumes.items() if k != key}
        return replace(state, halts={**state.halts, key: halt}, resumes=resumes)
    if isinstance(event, PartitionResumeRequested):
        key = partition_key(event.flow, event.topic, event.partition)
        resume = ResumeInfo(
            event.flow,
            event.topic,
            event.partition,
            event.mode,
            event.offset,
            event.request_id,
            envelope.by or "unknown",
            envelope.at_ms,
        )
        halts = {k: h for k, h in state.halts.items() if k != key}
        return replace(state, halts=halts, resumes={**state.resumes, key: resume})
    if isinstance(event, RecordsLost):
        key = partition_key(event.flow, event.topic, event.partition)
        ranges = state.losses.get(key, ())
        lost = (event.first_offset, event.end_offset)
        if lost in ranges:
            return state
        return replace(state, losses={**state.losses, key: tuple(sorted((*ranges, lost)))})
    return state


def _remember(state: ControlState, command_id: str, envelope: Envelope) -> ControlState:
    """Count ``envelope`` to its command; a new id forgets the oldest beyond the limit."""
    known = state.commands.get(command_id)
    if known is not None:
        applied = replace(known, events=known.events + 1)
        return replace(state, commands={**state.commands, command_id: applied})
    applied = AppliedCommand(envelope.at_ms, envelope.by or "unknown", 1)
    commands = {**state.commands, command_id: applied}
    if len(commands) > COMMANDS_REMEMBERED:
        del commands[next(iter(commands))]
    return replace(state, commands=commands)


def _with_flow(state: ControlState, name: str, flow: FlowState) -> ControlState:
    return replace(state, flows={**state.flows, name: flow})


def replay(
    envelopes: Iterable[Envelope],
    *,
    until_ms: int | None = None,
    until_offset: int | None = None,
) -> ControlState:
    """The state after every envelope up to (not past) ``until_ms`` and ``until_offset``:
    folding stops before the first envelope appended later or stored further on."""
    state = ControlState()
    for envelope in envelopes:
        if until_ms is not None and envelope.at_ms > until_ms:
            break
        if until_offset is not None and envelope.offset > until_offset:
            break
        state = apply(state, envelope)
    return state
