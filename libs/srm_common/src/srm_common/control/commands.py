"""Operator commands and config-file changes, validated into the events they decide.

Pure: the coordinator passes the folded state in and appends what comes out. A command
that would change nothing decides no events. A command carries its caller's id
(:func:`command_id`), which the leader records on the events it decides; a retry under
that id is answered from the log (:func:`applied_before`) instead of being decided again,
so a command the caller did not hear back about applies once.

Input is bounded: at most ``MAX_PATTERNS`` patterns per command, each at most
``MAX_PATTERN_LENGTH`` characters (the HTTP API also caps the body at 1 MiB).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from srm_common.control.flow_records import FlowState
from srm_common.control.schema import (
    ConfigApplied,
    Event,
    FlowBaseline,
    FlowDisabled,
    FlowEnabled,
    PartitionHalted,
    PartitionResumeRequested,
    PatternKind,
    PatternList,
    RecordsLost,
    pattern_event_class,
)
from srm_common.control.state import ControlState, partition_key
from srm_common.control.state_records import AppliedCommand
from srm_common.domain.filters import compile_patterns
from srm_common.domain.resume import ResumePoint
from srm_common.errors import ConfigError, InvalidCommandError

PatternAction = Literal["add", "remove", "add-blacklist", "remove-blacklist"]

# srm-control's action words (Cloudera SRM's) -> the list they edit and whether they add.
_ACTIONS: Mapping[str, tuple[PatternList, bool]] = {
    "add": ("allow", True),
    "remove": ("allow", False),
    "add-blacklist": ("deny", True),
    "remove-blacklist": ("deny", False),
}
_LIST_FIELDS = ("topics", "topics_exclude", "groups", "groups_exclude")
_NO_FLOW = FlowBaseline(False, (), (), (), ())
MAX_PATTERNS = 100
MAX_PATTERN_LENGTH = 1000


class CommandRejected(InvalidCommandError):
    """A command refused as a whole; the message says what is wrong and what to do."""


@dataclass(frozen=True, slots=True)
class ChangePatterns:
    """``srm-control topics|groups --source S --target T --add ... ``: edit one list.
    ``command_id`` (the caller's, the same in every retry) makes a retry apply once."""

    flow: str
    kind: PatternKind
    action: PatternAction
    patterns: tuple[str, ...]
    command_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "patterns", tuple(self.patterns))


@dataclass(frozen=True, slots=True)
class ResumePartition:
    """``srm-control partitions --resume T:P --from MODE``: resume a halted partition
    from an explicit choice; ``request_id`` (the caller's) makes a retry apply once."""

    flow: str
    topic: str
    partition: int
    point: ResumePoint
    request_id: str


@dataclass(frozen=True, slots=True)
class ReportHalt:
    """A driver halted a partition: recorded so operators see it and can resume it."""

    flow: str
    topic: str
    partition: int
    kind: str
    reason: str
    driver: str


@dataclass(frozen=True, slots=True)
class ReportLoss:
    """A driver found source offsets ``[first_offset, end_offset)`` deleted by retention
    before they were copied."""

    flow: str
    topic: str
    partition: int
    first_offset: int
    end_offset: int
    driver: str


Command = ChangePatterns | ResumePartition | ReportHalt | ReportLoss
HALT_KINDS = ("conflict", "recreated", "truncated", "missing", "retention", "poison")
MAX_REASON = 2000


def command_id(command: Command) -> str | None:
    """The caller's id of ``command``, if it gave one (drivers' reports have none)."""
    if isinstance(command, ChangePatterns):
        return command.command_id
    if isinstance(command, ResumePartition):
        return command.request_id
    return None


def applied_before(state: ControlState, command: Command) -> AppliedCommand | None:
    """The record of ``command`` when the log already holds events under its id (a retry
    of a command that was applied); ``None`` otherwise: decide it."""
    given = command_id(command)
    return None if given is None else state.commands.get(given)


def parse_flow(flow: str, aliases: Sequence[str]) -> tuple[str, str]:
    """``(source, target)`` of ``"S->T"``; :class:`CommandRejected` unless both are known
    aliases and differ."""
    source, arrow, target = (part.strip() for part in flow.partition("->"))
    if not arrow or not source or not target:
        example = "->".join(aliases[:2]) if len(aliases) >= 2 else "primary->backup"
        raise CommandRejected(f"flow {flow!r} is not SOURCE->TARGET; name it like {example}")
    known = ", ".join(aliases) or "none"
    for alias in (source, target):
        if alias not in aliases:
            raise CommandRejected(f"unknown cluster alias {alias!r}; known aliases: {known}")
    if source == target:
        raise CommandRejected(
            f"flow {flow!r} would replicate {source} into itself; name two different aliases"
        )
    return source, target


def decide(state: ControlState, command: Command, *, aliases: Sequence[str]) -> list[Event]:
    """The events a command decides; [] when it changes nothing. See each ``_decide_*``."""
    if isinstance(command, ChangePatterns):
        return _decide_patterns(state, command, aliases=aliases)
    source, target = parse_flow(command.flow, aliases)
    flow = f"{source}->{target}"
    if not command.topic or command.partition < 0:
        raise CommandRejected(f"{command.topic!r}-{command.partition} is not a topic partition")
    key = partition_key(flow, command.topic, command.partition)
    where = f"{flow} {command.topic}-{command.partition}"
    if isinstance(command, ResumePartition):
        return _decide_resume(state, command, flow, key, where)
    if isinstance(command, ReportHalt):
        if command.kind not in HALT_KINDS:
            raise CommandRejected(f"unknown halt kind {command.kind!r}; one of {HALT_KINDS}")
        reason = command.reason[:MAX_REASON]
        known = state.halts.get(key)
        if known is not None and (known.kind, known.reason) == (command.kind, reason):
            return []  # reported again (a retry, or another driver that tried it)
        return [
            PartitionHalted(
                flow, command.topic, command.partition, command.kind, reason, command.driver
            )
        ]
    if not 0 <= command.first_offset < command.end_offset:
        raise CommandRejected(
            f"{where}: lost offsets {command.first_offset}..{command.end_offset} are not a range"
        )
    if (command.first_offset, command.end_offset) in state.losses.get(key, ()):
        return []
    return [
        RecordsLost(
            flow,
            command.topic,
            command.partition,
            command.first_offset,
            command.end_offset,
            command.driver,
        )
    ]


def _decide_resume(
    state: ControlState, command: ResumePartition, flow: str, key: str, where: str
) -> list[Event]:
    """Resume a halted partition; refused unless it is halted (the point is valid: a
    :class:`ResumePoint` is built only valid)."""
    pending = state.resumes.get(key)
    if pending is not None and pending.request_id == command.request_id:
        return []  # the same request again: applied once
    if key not in state.halts:
        halted = sorted(
            k.split("|", 1)[1].replace("|", "-") for k in state.halts if k.startswith(flow + "|")
        )
        listed = ", ".join(halted) if halted else "none"
        raise CommandRejected(f"{where} is not halted, nothing to resume (halted now: {listed})")
    return [
        PartitionResumeRequested(
            flow,
            command.topic,
            command.partition,
            command.point.mode.value,
            command.point.offset,
            command.request_id,
        )
    ]


def _decide_patterns(
    state: ControlState, command: ChangePatterns, *, aliases: Sequence[str]
) -> list[Event]:
    """The events of a pattern change: [] when it changes nothing (adding what is there).

    Refuses (:class:`CommandRejected`) an unknown flow, kind or action, no patterns, a
    pattern that does not compile, and removing a pattern the list does not hold.
    """
    source, target = parse_flow(command.flow, aliases)
    flow = f"{source}->{target}"
    if command.kind not in ("topics", "groups"):
        raise CommandRejected(f"unknown pattern kind {command.kind!r}; use topics or groups")
    if command.action not in _ACTIONS:
        known = ", ".join(_ACTIONS)
        raise CommandRejected(f"unknown action {command.action!r}; use one of {known}")
    list_, adds = _ACTIONS[command.action]
    cls = pattern_event_class(command.kind, list_, adds)
    where = f"{cls.list_name()} of {flow}"
    if len(command.patterns) > MAX_PATTERNS:
        raise CommandRejected(
            f"{len(command.patterns)} patterns for the {where}: at most {MAX_PATTERNS} per"
            " command; split the change, nothing was changed"
        )
    patterns = tuple(dict.fromkeys(p.strip() for p in command.patterns if p.strip()))
    if not patterns:
        raise CommandRejected(f"no pattern given for the {where}; name at least one")
    current = state.flow(flow).patterns(cls.list_field())
    for pattern in patterns:
        # A pattern the list holds (from the config file) stays removable.
        if len(pattern) > MAX_PATTERN_LENGTH and (adds or pattern not in current):
            raise CommandRejected(
                f"a pattern of {len(pattern)} characters ({pattern[:40]!r}...) for the"
                f" {where}: at most {MAX_PATTERN_LENGTH} characters; nothing was changed"
            )
    if adds:
        # Removal skips this check: a pattern that a stricter release no longer accepts
        # must still be removable.
        for pattern in patterns:
            _check_compiles(pattern, cls.list_field().replace("_", "."), where)
        new = tuple(p for p in patterns if p not in current)
        return [cls(flow, new)] if new else []
    missing = [p for p in patterns if p not in current]
    if missing:
        names = ", ".join(repr(p) for p in missing)
        verb = "is" if len(missing) == 1 else "are"
        holds = f"it holds: {', '.join(current)}" if current else "it is empty"
        raise CommandRejected(f"{names} {verb} not in the {where} ({holds}); nothing was changed")
    return [cls(flow, patterns)]


def _check_compiles(pattern: str, key: str, where: str) -> None:
    try:
        compile_patterns([pattern], key=key)
    except ConfigError as exc:
        raise CommandRejected(f"{where}: {exc.message}; nothing was changed") from exc


def baseline_digest(baseline: Mapping[str, FlowBaseline]) -> str:
    """A short digest of a configuration baseline (each flow's switch and lists), to
    tell two files apart in messages; the log holds the baseline itself."""
    plain = {
        name: [flow.enabled, *map(list, (flow.topics, flow.topics_exclude))]
        + [list(flow.groups), list(flow.groups_exclude)]
        for name, flow in sorted(baseline.items())
    }
    return hashlib.sha256(json.dumps(plain, sort_keys=True).encode()).hexdigest()[:12]


def config_drift(
    state: ControlState, baseline: Mapping[str, FlowBaseline], path: str
) -> str | None:
    """Why a take-over must not apply this file by itself, or None when it may: a log
    that has a baseline from a file with other contents. (A log with none takes the
    first file; the same contents under another path are only recorded.)"""
    if state.config_path is None or dict(baseline) == dict(state.baseline):
        return None
    return (
        f"the configuration file {path} (digest {baseline_digest(baseline)}) differs from"
        f" the log's baseline, applied from {state.config_path} (digest"
        f" {baseline_digest(state.baseline)}); not applied. Changes made with srm-control"
        " stay as they are. To make this file the baseline, restart this coordinator with"
        " --apply-config (its changes since the baseline are then applied, audited)"
    )


def config_diff(
    state: ControlState, baseline: Mapping[str, FlowBaseline], path: str
) -> list[Event]:
    """The events that bring the log in line with the config file's ``baseline``.

    Only what the file changed since the previously applied file (``state.baseline``)
    is applied, so patterns added or removed with srm-control survive a restart with an
    unchanged file. A flow the file no longer mentions counts as disabled with empty
    lists. Each change is applied only where the state still differs (an operator may
    have made it already). Ends with :class:`ConfigApplied` when the file differs from
    the recorded one; [] when nothing changed.
    """
    events: list[Event] = []
    for name in sorted({*state.baseline, *baseline}):
        events += _flow_diff(name, state.baseline.get(name), baseline.get(name), state)
    if dict(baseline) != dict(state.baseline) or path != state.config_path:
        events.append(ConfigApplied(path, baseline))
    return events


def _flow_diff(
    name: str, old: FlowBaseline | None, new: FlowBaseline | None, state: ControlState
) -> list[Event]:
    new = new or _NO_FLOW
    now = state.flow(name)
    switched = (old.enabled if old else False) != new.enabled and now.enabled != new.enabled
    events: list[Event] = [FlowDisabled(name)] if switched and not new.enabled else []
    for list_field in _LIST_FIELDS:
        events += _list_diff(name, list_field, old, new, now)
    # Enabling comes last so that the flow never runs on half of its new lists.
    return events + [FlowEnabled(name)] if switched and new.enabled else events


def _list_diff(
    name: str, list_field: str, old: FlowBaseline | None, new: FlowBaseline, now: FlowState
) -> list[Event]:
    before: tuple[str, ...] = getattr(old, list_field) if old else ()
    after: tuple[str, ...] = getattr(new, list_field)
    current = now.patterns(list_field)
    added = tuple(p for p in dict.fromkeys(after) if p not in before and p not in current)
    removed = tuple(p for p in dict.fromkeys(before) if p not in after and p in current)
    kind: PatternKind = "topics" if list_field.startswith("topics") else "groups"
    list_: PatternList = "deny" if list_field.endswith("_exclude") else "allow"
    events: list[Event] = []
    if added:
        events.append(pattern_event_class(kind, list_, True)(name, added))
    if removed:
        events.append(pattern_event_class(kind, list_, False)(name, removed))
    return events
