"""Control event schemas: every fact of the control path as a frozen, versioned type.

Flows, their allow and deny lists, task configs, membership and assignment change only
by appending one of these to the event log; state is a fold over them
(:mod:`srm_common.control.state`). A released ``VERSION`` never changes: a new schema is
``VERSION + 1`` plus a pure upcaster in ``UPCASTERS``, which the codec applies step by
step, so a log written by any earlier release still replays. Import these from
:mod:`srm_common.control.events`, which adds the codec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

from srm_common.domain.resume import ResumePoint
from srm_common.errors import SrmError
from srm_common.tracecontext import TraceContext

PatternKind = Literal["topics", "groups"]
PatternList = Literal["allow", "deny"]


class EventDecodeError(SrmError):
    """Bytes of the event log that do not decode to an event this release knows."""


class NotAnEvent(EventDecodeError):
    """Bytes that are not an event record at all (not JSON, not an envelope, or fields of
    the wrong type): readers skip and report them (:mod:`srm_common.control.integrity`)."""


class NewerEvent(EventDecodeError):
    """A well-formed event record of a type or version this release does not know: it was
    written by a newer SRM, so nothing after it can be folded by this one."""


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every control event: ``TYPE`` is its stable wire name, ``VERSION`` the
    schema this release writes."""

    TYPE: ClassVar[str]
    VERSION: ClassVar[int] = 1


@dataclass(frozen=True, slots=True)
class LogStarted(Event):
    """The log's identity, its first event: ``log_id`` is random, so a log recreated
    under the same topic name is told apart from the one a reader knew. A log written by
    ``srm-control restore`` names the lost log in ``restored_from`` and what it was
    rebuilt from in ``source`` (a SQL projection or an audit export; "" otherwise; a log
    that took over the configuration of the single log of an earlier release says so
    there too). A log older than log ids gets one from the first leader that reads it
    (not first then). v2 added ``target``: the cluster whose flows the log holds (v1
    records decode with ``""``: the single log of releases before per-target logs)."""

    TYPE = "log.started"
    VERSION = 2
    log_id: str
    restored_from: str | None
    source: str
    target: str = ""


@dataclass(frozen=True, slots=True)
class LogMigrated(Event):
    """Written into the single log of an earlier release: the configuration of the
    flows into ``target`` moved to that cluster's own log ``log_id``, so it is never
    moved again. A release before per-target logs reads this as an event of a newer SRM
    and stops folding there (its coordinators stand by)."""

    TYPE = "log.migrated"
    target: str
    log_id: str


@dataclass(frozen=True, slots=True)
class CoordinatorElected(Event):
    """A coordinator instance became leader; ``epoch`` (its term) only ever increases."""

    TYPE = "coordinator.elected"
    coordinator: str
    url: str
    epoch: int


@dataclass(frozen=True, slots=True)
class FlowBaseline:
    """What the config file says about one flow (a value inside :class:`ConfigApplied`)."""

    enabled: bool
    topics: tuple[str, ...]
    topics_exclude: tuple[str, ...]
    groups: tuple[str, ...]
    groups_exclude: tuple[str, ...]

    def __post_init__(self) -> None:
        for name in ("topics", "topics_exclude", "groups", "groups_exclude"):
            object.__setattr__(self, name, tuple(getattr(self, name)))


@dataclass(frozen=True, slots=True)
class ConfigApplied(Event):
    """The config file's view of every flow, recorded so that the next start can tell
    what the file changed from what an operator changed with srm-control."""

    TYPE = "config.applied"
    path: str
    flows: Mapping[str, FlowBaseline]

    def __post_init__(self) -> None:
        # A plain dict (picklable, works with dataclasses.asdict), copied so that the
        # caller's dict cannot change the event afterwards.
        object.__setattr__(self, "flows", dict(sorted(self.flows.items())))


@dataclass(frozen=True, slots=True)
class FlowEnabled(Event):
    TYPE = "flow.enabled"
    flow: str


@dataclass(frozen=True, slots=True)
class FlowDisabled(Event):
    TYPE = "flow.disabled"
    flow: str


@dataclass(frozen=True, slots=True)
class PatternEvent(Event):
    """Patterns added to or removed from one list of a flow; the class says which list
    (``KIND`` topics|groups, ``LIST`` allow|deny) and whether it adds (``ADDS``)."""

    KIND: ClassVar[PatternKind]
    LIST: ClassVar[PatternList]
    ADDS: ClassVar[bool]
    flow: str
    patterns: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "patterns", tuple(self.patterns))

    @classmethod
    def list_field(cls) -> str:
        """The edited field of a flow: ``topics``, ``topics_exclude``, ``groups``..."""
        return cls.KIND if cls.LIST == "allow" else f"{cls.KIND}_exclude"

    @classmethod
    def list_name(cls) -> str:
        """The list in operator words: ``topics allowlist``, ``groups denylist``."""
        return f"{cls.KIND} {cls.LIST}list"


@dataclass(frozen=True, slots=True)
class TopicsAllowed(PatternEvent):
    TYPE, KIND, LIST, ADDS = "topics.allowed", "topics", "allow", True


@dataclass(frozen=True, slots=True)
class TopicsAllowRemoved(PatternEvent):
    TYPE, KIND, LIST, ADDS = "topics.allow_removed", "topics", "allow", False


@dataclass(frozen=True, slots=True)
class TopicsDenied(PatternEvent):
    TYPE, KIND, LIST, ADDS = "topics.denied", "topics", "deny", True


@dataclass(frozen=True, slots=True)
class TopicsDenyRemoved(PatternEvent):
    TYPE, KIND, LIST, ADDS = "topics.deny_removed", "topics", "deny", False


@dataclass(frozen=True, slots=True)
class GroupsAllowed(PatternEvent):
    TYPE, KIND, LIST, ADDS = "groups.allowed", "groups", "allow", True


@dataclass(frozen=True, slots=True)
class GroupsAllowRemoved(PatternEvent):
    TYPE, KIND, LIST, ADDS = "groups.allow_removed", "groups", "allow", False


@dataclass(frozen=True, slots=True)
class GroupsDenied(PatternEvent):
    TYPE, KIND, LIST, ADDS = "groups.denied", "groups", "deny", True


@dataclass(frozen=True, slots=True)
class GroupsDenyRemoved(PatternEvent):
    TYPE, KIND, LIST, ADDS = "groups.deny_removed", "groups", "deny", False


PATTERN_EVENTS: tuple[type[PatternEvent], ...] = (
    TopicsAllowed,
    TopicsAllowRemoved,
    TopicsDenied,
    TopicsDenyRemoved,
    GroupsAllowed,
    GroupsAllowRemoved,
    GroupsDenied,
    GroupsDenyRemoved,
)


def pattern_event_class(kind: PatternKind, list_: PatternList, adds: bool) -> type[PatternEvent]:
    """The event class that adds to (or removes from) the ``kind`` ``list_`` list."""
    for cls in PATTERN_EVENTS:
        if (cls.KIND, cls.LIST, cls.ADDS) == (kind, list_, adds):
            return cls
    raise ValueError(f"no pattern event for {kind} {list_} adds={adds}")


# One topic's partitions and the source task of each: ``("orders", 0, (0, 1, 2, 0))``
# says partitions 0..3 of orders belong to source tasks 0, 1, 2, 0. A topic may be split
# over several entries (by ``first``), so that no entry outgrows an event.
TopicOwners = tuple[str, int, tuple[int, ...]]
# Groups of one checkpoint task: ``(1, ("billing", "shipping"))``.
GroupOwners = tuple[int, tuple[str, ...]]


def _topic_entries(entries: object) -> tuple[TopicOwners, ...]:
    return tuple((str(t), int(f), tuple(o)) for t, f, o in entries)  # type: ignore[attr-defined]


def _group_entries(entries: object) -> tuple[GroupOwners, ...]:
    return tuple((int(i), tuple(g)) for i, g in entries)  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class TaskConfigsPart(Event):
    """Part ``part`` (from 0) of task config generation ``generation`` of a flow, too
    large for one event: more of its ``topics`` and ``groups`` entries (see
    :class:`TaskConfigsGenerated`, which follows the parts and completes them)."""

    TYPE = "task_configs.part"
    flow: str
    generation: int
    part: int
    topics: tuple[TopicOwners, ...]
    groups: tuple[GroupOwners, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", _topic_entries(self.topics))
        object.__setattr__(self, "groups", _group_entries(self.groups))


@dataclass(frozen=True, slots=True)
class TaskConfigsGenerated(Event):
    """The task config set of one flow, generation ``generation`` (counting the flow's
    task config changes): ``source_tasks`` source tasks over ``partitions`` partitions,
    ``checkpoint_tasks`` checkpoint tasks, a heartbeat task if ``heartbeat``.

    Which task holds what is given per topic (``topics``: each partition's source task)
    and per checkpoint task (``groups``), here and in the ``parts``
    :class:`TaskConfigsPart` events of the same flow and generation that precede this
    one in the log (0 when everything fits in this event). Every event stays under
    :data:`srm_common.control.task_configs.EVENT_BYTES_MAX` whatever the partition count
    (docs/design.md, section 8). v1 listed every partition of every task in one event
    (about 19 bytes each, past 1 MB near 50,000 partitions); it is upcast to v2."""

    TYPE = "task_configs.generated"
    VERSION = 2
    flow: str
    generation: int
    source_tasks: int
    checkpoint_tasks: int
    heartbeat: bool
    partitions: int
    topics: tuple[TopicOwners, ...]
    groups: tuple[GroupOwners, ...]
    parts: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", _topic_entries(self.topics))
        object.__setattr__(self, "groups", _group_entries(self.groups))


@dataclass(frozen=True, slots=True)
class DriverJoined(Event):
    """A driver incarnation joined the group. v2 added ``host`` (v1 records decode with
    ``host=""``); v3 added ``instance``, the incarnation (older records: ``""``, any)."""

    TYPE = "driver.joined"
    VERSION = 3
    driver: str
    url: str
    host: str
    instance: str = ""


@dataclass(frozen=True, slots=True)
class DriverLeft(Event):
    TYPE = "driver.left"
    driver: str
    reason: str


@dataclass(frozen=True, slots=True)
class AssignmentChanged(Event):
    """Assignment generation ``generation``: ``assigned`` maps task id -> driver for tasks
    newly (re)assigned; ``revoked`` tasks are taken away and left unassigned."""

    TYPE = "assignment.changed"
    generation: int
    assigned: Mapping[str, str]
    revoked: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "assigned", dict(sorted(self.assigned.items())))
        object.__setattr__(self, "revoked", tuple(self.revoked))


@dataclass(frozen=True, slots=True)
class PartitionHalted(Event):
    """A driver stopped copying one partition rather than guess (``kind``: conflict,
    recreated, truncated, missing, retention, poison); only an operator resumes it."""

    TYPE = "partition.halted"
    flow: str
    topic: str
    partition: int
    kind: str
    reason: str
    driver: str


@dataclass(frozen=True, slots=True)
class PartitionResumeRequested(Event):
    """An operator asked to resume a halted partition: ``mode`` copy-end, source-start,
    source-end or offset (then ``offset``). ``request_id`` makes the resume apply once."""

    TYPE = "partition.resume_requested"
    flow: str
    topic: str
    partition: int
    mode: str
    offset: int | None
    request_id: str

    @property
    def point(self) -> ResumePoint:
        """The resume point the fields name (decided valid; read as one value)."""
        return ResumePoint.parse(self.mode, self.offset)


@dataclass(frozen=True, slots=True)
class RecordsLost(Event):
    """Retention deleted source offsets ``[first_offset, end_offset)`` of a partition
    before they were copied: a loss SRM could not prevent, recorded so nobody misses it."""

    TYPE = "records.lost"
    flow: str
    topic: str
    partition: int
    first_offset: int
    end_offset: int
    driver: str


@dataclass(frozen=True, slots=True)
class Envelope:
    """An event with its metadata; ``offset`` is its log position, set by readers (-1
    before it is appended) and never encoded. ``trace``: the W3C trace context of the
    command that caused the event (srm-control's trace), for the driver that applies it."""

    event: Event
    at_ms: int
    by: str | None = None
    command_id: str | None = None
    offset: int = -1
    trace: TraceContext | None = None


EVENT_TYPES: Mapping[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        LogStarted,
        LogMigrated,
        CoordinatorElected,
        ConfigApplied,
        FlowEnabled,
        FlowDisabled,
        *PATTERN_EVENTS,
        TaskConfigsPart,
        TaskConfigsGenerated,
        DriverJoined,
        DriverLeft,
        AssignmentChanged,
        PartitionHalted,
        PartitionResumeRequested,
        RecordsLost,
    )
}
