"""The control path's pure core: an event-sourced log of every decision.

The leading coordinator is the only writer of ``srm.control.events``: it validates
operator commands and config-file changes (:mod:`.commands`), plans each flow's tasks
(:mod:`.planning`) and assigns them to drivers (:mod:`.assignment`), appending each
decision as a versioned event (:mod:`.events`). Every reader — a driver, the next
coordinator, ``srm-control audit`` — folds the same events into the same
:class:`ControlState` (:mod:`.state`), so the state at any past moment is a replay away.
Nothing here does I/O; the Kafka adapters move the bytes.
"""

from __future__ import annotations

from srm_common.control.assignment import MemberReport, Rebalance, rebalance
from srm_common.control.commands import (
    ChangePatterns,
    CommandRejected,
    PatternAction,
    config_diff,
    decide,
)
from srm_common.control.events import (
    AssignmentChanged,
    ConfigApplied,
    CoordinatorElected,
    DriverJoined,
    DriverLeft,
    Envelope,
    Event,
    EventDecodeError,
    FlowBaseline,
    FlowDisabled,
    FlowEnabled,
    GroupsAllowed,
    GroupsAllowRemoved,
    GroupsDenied,
    GroupsDenyRemoved,
    PatternEvent,
    TaskConfigsGenerated,
    TopicsAllowed,
    TopicsAllowRemoved,
    TopicsDenied,
    TopicsDenyRemoved,
    decode,
    describe,
    encode,
    event_key,
)
from srm_common.control.planning import plan_flow_tasks, tasks_gaining_partitions
from srm_common.control.state import (
    ControlState,
    DriverInfo,
    FlowState,
    FlowTasks,
    Leader,
    apply,
    checkpoint_task_id,
    heartbeat_task_id,
    parse_task_id,
    replay,
    source_task_id,
)

__all__ = [
    "AssignmentChanged",
    "ChangePatterns",
    "CommandRejected",
    "ConfigApplied",
    "ControlState",
    "CoordinatorElected",
    "DriverInfo",
    "DriverJoined",
    "DriverLeft",
    "Envelope",
    "Event",
    "EventDecodeError",
    "FlowBaseline",
    "FlowDisabled",
    "FlowEnabled",
    "FlowState",
    "FlowTasks",
    "GroupsAllowRemoved",
    "GroupsAllowed",
    "GroupsDenied",
    "GroupsDenyRemoved",
    "Leader",
    "MemberReport",
    "PatternAction",
    "PatternEvent",
    "Rebalance",
    "TaskConfigsGenerated",
    "TopicsAllowRemoved",
    "TopicsAllowed",
    "TopicsDenied",
    "TopicsDenyRemoved",
    "apply",
    "checkpoint_task_id",
    "config_diff",
    "decide",
    "decode",
    "describe",
    "encode",
    "event_key",
    "heartbeat_task_id",
    "parse_task_id",
    "plan_flow_tasks",
    "rebalance",
    "replay",
    "source_task_id",
    "tasks_gaining_partitions",
]
