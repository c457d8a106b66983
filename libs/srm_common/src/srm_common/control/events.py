"""Control events and their codec: the one import for producers and readers of the log.

The types live in :mod:`srm_common.control.schema`, the bytes, record keys and audit
lines in :mod:`srm_common.control.codec`; this module puts them under one name.
"""

from __future__ import annotations

from srm_common.control.codec import decode, describe, encode, event_key
from srm_common.control.schema import (
    EVENT_TYPES,
    PATTERN_EVENTS,
    UPCASTERS,
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
    PatternKind,
    PatternList,
    TaskConfigsGenerated,
    TopicsAllowed,
    TopicsAllowRemoved,
    TopicsDenied,
    TopicsDenyRemoved,
    pattern_event_class,
    upcast_driver_joined_v1_to_v2,
)

__all__ = [
    "EVENT_TYPES",
    "PATTERN_EVENTS",
    "UPCASTERS",
    "AssignmentChanged",
    "ConfigApplied",
    "CoordinatorElected",
    "DriverJoined",
    "DriverLeft",
    "Envelope",
    "Event",
    "EventDecodeError",
    "FlowBaseline",
    "FlowDisabled",
    "FlowEnabled",
    "GroupsAllowRemoved",
    "GroupsAllowed",
    "GroupsDenied",
    "GroupsDenyRemoved",
    "PatternEvent",
    "PatternKind",
    "PatternList",
    "TaskConfigsGenerated",
    "TopicsAllowRemoved",
    "TopicsAllowed",
    "TopicsDenied",
    "TopicsDenyRemoved",
    "decode",
    "describe",
    "encode",
    "event_key",
    "pattern_event_class",
    "upcast_driver_joined_v1_to_v2",
]
