"""Bytes, keys and audit lines of control events: encode, decode (upcasting), describe.

A record value is compact UTF-8 JSON with sorted keys::

    {"at":1700000000000,"by":"srm-control alice","command":"c-17","data":{...},
     "type":"topics.allowed","version":1}

``data`` holds the event's fields by name; tuples are JSON lists, so a partition
``("orders", 3)`` is ``["orders",3]``. The log offset is not stored: it is where the
record is.

An event a command caused also carries the command's W3C trace context, an optional
envelope field beside ``command`` (the envelope has no version of its own; events keep
theirs)::

    "trace":{"traceparent":"00-<trace id>-<span id>-01","tracestate":"..."}

It is written only when there is one, so every other record's bytes are as before, and
a reader of an older release ignores it (it reads the envelope fields it knows). A
``trace`` that is not a well-formed context is dropped on reading: a trace is never
worth an event.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from functools import cache
from types import NoneType, UnionType
from typing import cast, get_args, get_origin, get_type_hints

from srm_common.control.schema import (
    EVENT_TYPES,
    AssignmentChanged,
    ConfigApplied,
    CoordinatorElected,
    DriverJoined,
    DriverLeft,
    Envelope,
    Event,
    EventDecodeError,
    FlowDisabled,
    FlowEnabled,
    LogMigrated,
    LogStarted,
    NewerEvent,
    NotAnEvent,
    PartitionHalted,
    PartitionResumeRequested,
    PatternEvent,
    RecordsLost,
    TaskConfigsGenerated,
    TaskConfigsPart,
)
from srm_common.control.upcasters import UPCASTERS, Data
from srm_common.tracecontext import parse_trace

_UPGRADE = "it was written by a newer SRM: upgrade this coordinator, driver or srm-control"


def encode(envelope: Envelope) -> bytes:
    """The record value of ``envelope`` (its offset is not part of it)."""
    event = envelope.event
    record = {
        "type": event.TYPE,
        "version": event.VERSION,
        "at": envelope.at_ms,
        "by": envelope.by,
        "command": envelope.command_id,
        "data": _to_json(event),
    }
    if envelope.trace is not None:
        record["trace"] = envelope.trace.headers()
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _to_json(value: object) -> object:
    if isinstance(value, tuple):
        items = cast(tuple[object, ...], value)
        if set(map(type, items)) <= _PLAIN:
            return list(items)  # the fast way for long lists of partitions' tasks
        return [_to_json(item) for item in items]
    if isinstance(value, dict):
        entries = cast(dict[str, object], value)
        return {key: _to_json(item) for key, item in entries.items()}
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_json(getattr(value, f.name)) for f in fields(value)}
    return value


def decode(value: bytes, *, offset: int = -1) -> Envelope:
    """The envelope stored as ``value`` at log position ``offset``, upcast to the event's
    current version. One line naming the offset otherwise: :class:`NotAnEvent` when the
    bytes are not an event record (a reader skips it), :class:`NewerEvent` when they are
    one of a type or version this release does not know (a reader stops there)."""
    where = f"control event at offset {offset}" if offset >= 0 else "control event"
    try:
        record = json.loads(value)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotAnEvent(f"{where} is not JSON: {exc}") from exc
    if not isinstance(record, dict):
        raise NotAnEvent(f"{where} is not a JSON object but {_actual(record)}")
    fields_ = cast(dict[str, object], record)
    try:
        # The envelope first: only a well-formed record can be a newer SRM's event.
        type_ = cast(str, _required(fields_, "type", str, where))
        version = cast(int, _required(fields_, "version", int, where))
        if version < 1:
            raise EventDecodeError(
                f"{where} ({type_} v{version}): field 'version' must be 1 or more"
            )
        at = cast(int, _required(fields_, "at", int, where))
        by = cast(str | None, _read(fields_.get("by"), str | None, where, "by"))
        command = cast(str | None, _read(fields_.get("command"), str | None, where, "command"))
        data = cast(Data, _required(fields_, "data", dict, where))
    except EventDecodeError as exc:
        raise NotAnEvent(str(exc)) from None
    cls = EVENT_TYPES.get(type_)
    if cls is None:
        raise NewerEvent(f"{where}: unknown event type {type_!r}; {_UPGRADE}")
    where = f"{where} ({type_} v{version})"
    if version > cls.VERSION:
        raise NewerEvent(f"{where}: this release reads up to v{cls.VERSION}; {_UPGRADE}")
    try:
        for step in range(version, cls.VERSION):
            data = UPCASTERS[(type_, step)](data)
        event = cast(Event, _read_dataclass(cls, data, where, ""))
    except EventDecodeError as exc:
        raise NotAnEvent(str(exc)) from None
    trace = fields_.get("trace")
    context = parse_trace(cast(dict[str, object], trace)) if isinstance(trace, dict) else None
    return Envelope(event, at, by, command, offset, context)


def _required(record: dict[str, object], name: str, hint: object, where: str) -> object:
    if name not in record:
        raise EventDecodeError(f"{where}: missing field {name!r}")
    return _read(record[name], hint, where, name)


@cache
def _hints(cls: type) -> dict[str, object]:
    return get_type_hints(cls)


def _read_dataclass(cls: type, data: dict[str, object], where: str, path: str) -> object:
    hints = _hints(cls)
    values: dict[str, object] = {}
    for f in fields(cls):
        name = f"{path}.{f.name}" if path else f.name
        if f.name not in data:
            raise EventDecodeError(f"{where}: missing field {name!r}")
        values[f.name] = _read(data[f.name], hints[f.name], where, name)
    return cls(**values)


def _read(value: object, hint: object, where: str, path: str) -> object:
    """``value`` (parsed JSON) as the Python type ``hint``, or EventDecodeError."""
    declared, raw = hint, value
    origin, args = _shape(hint)
    if origin is UnionType and NoneType in args:  # X | None
        if value is None:
            return None
        hint = args[0]
        origin, args = _shape(hint)
    if hint is bool and isinstance(value, bool):
        return value
    if hint is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if hint is str and isinstance(value, str):
        return value
    if hint is dict and isinstance(value, dict):
        return cast(dict[str, object], value)
    if origin is tuple and isinstance(value, list):
        items = cast(list[object], value)
        if len(args) == 2 and args[1] is Ellipsis:
            kind = args[0]
            if (kind is int or kind is str) and set(map(type, items)) <= {kind}:
                return tuple(items)  # the fast way for long lists of partitions' tasks
            args = (args[0],) * len(items)
        if len(items) == len(args):
            parts = zip(items, args, strict=True)
            return tuple(_read(v, a, where, f"{path}[{i}]") for i, (v, a) in enumerate(parts))
    if origin is Mapping and isinstance(value, dict):
        entries = cast(dict[str, object], value)
        return {k: _read(v, args[1], where, f"{path}.{k}") for k, v in entries.items()}
    target = cast(type, hint) if isinstance(hint, type) else None
    if target is not None and is_dataclass(target) and isinstance(value, dict):
        return _read_dataclass(target, cast(dict[str, object], value), where, path)
    expected, actual = _expected(declared), _actual(raw)
    raise EventDecodeError(f"{where}: field {path!r} must be {expected}, not {actual}")


_PLAIN = frozenset({int, str})
_SHAPES: dict[object, tuple[object, tuple[object, ...]]] = {}


def _shape(hint: object) -> tuple[object, tuple[object, ...]]:
    """``get_origin`` and ``get_args`` of a type hint, worked out once per hint."""
    shape = _SHAPES.get(hint)
    if shape is None:
        shape = _SHAPES[hint] = (get_origin(hint), get_args(hint))
    return shape


def _expected(hint: object) -> str:
    origin, args = get_origin(hint), get_args(hint)
    if origin is UnionType:
        return f"{_expected(args[0])} or null"
    if origin is tuple:
        return "a list" if len(args) == 2 and args[1] is Ellipsis else f"a list of {len(args)}"
    names: dict[object, str] = {bool: "true or false", int: "an integer", str: "a string"}
    return names.get(hint, "an object")


def _actual(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    names: dict[type, str] = {int: "an integer", float: "a number", str: "a string"}
    return names.get(type(value), "a list" if isinstance(value, list) else "an object")


def event_key(event: Event) -> bytes:
    """The record key: the flow for flow events, the driver id for driver events, else
    ``cluster``. Kafka keeps one key's records in order on one partition."""
    if isinstance(
        event,
        FlowEnabled
        | FlowDisabled
        | PatternEvent
        | TaskConfigsGenerated
        | TaskConfigsPart
        | PartitionHalted
        | PartitionResumeRequested
        | RecordsLost,
    ):
        return event.flow.encode()
    if isinstance(event, DriverJoined | DriverLeft):
        return event.driver.encode()
    return b"cluster"


def describe(envelope: Envelope) -> str:
    """One human line for audit output, e.g. ``topics allowlist of a->b: + orders.*``."""
    event = envelope.event
    if isinstance(event, LogStarted):
        of = f" of the flows into {event.target}" if event.target else ""
        if event.restored_from is None:
            origin = f" ({event.source})" if event.source else ""
            return f"event log {event.log_id}{of} started{origin}"
        lost = event.restored_from
        return f"event log {event.log_id}{of} restored from lost log {lost} ({event.source})"
    if isinstance(event, LogMigrated):
        return (
            f"the configuration of the flows into {event.target} moved to their own log"
            f" {event.log_id} (on {event.target})"
        )
    if isinstance(event, CoordinatorElected):
        return f"coordinator {event.coordinator} leads (epoch {event.epoch}, {event.url})"
    if isinstance(event, ConfigApplied):
        enabled = [name for name, flow in event.flows.items() if flow.enabled]
        on = ", ".join(enabled) or "none"
        return f"config {event.path} applied: {_count(len(event.flows), 'flow')}, enabled: {on}"
    if isinstance(event, FlowEnabled | FlowDisabled):
        return f"flow {event.flow} {'enabled' if isinstance(event, FlowEnabled) else 'disabled'}"
    if isinstance(event, PatternEvent):
        sign = "+" if event.ADDS else "-"
        return f"{event.list_name()} of {event.flow}: {sign} {', '.join(event.patterns)}"
    if isinstance(event, TaskConfigsGenerated):
        parts = f", in {event.parts + 1} events" if event.parts else ""
        return (
            f"task configs of {event.flow} (generation {event.generation}):"
            f" {_count(event.source_tasks, 'source task')}"
            f" over {_count(event.partitions, 'partition')},"
            f" {_count(event.checkpoint_tasks, 'checkpoint task')},"
            f" {'heartbeat' if event.heartbeat else 'no heartbeat'}{parts}"
        )
    if isinstance(event, TaskConfigsPart):
        partitions = sum(len(owners) for _topic, _first, owners in event.topics)
        groups = sum(len(names) for _index, names in event.groups)
        return (
            f"task configs of {event.flow} (generation {event.generation}), part"
            f" {event.part + 1}: {_count(partitions, 'partition')}, {_count(groups, 'group')}"
        )
    if isinstance(event, DriverJoined):
        instance = f", instance {event.instance}" if event.instance else ""
        return f"driver {event.driver} joined ({event.url}{instance})"
    if isinstance(event, PartitionHalted):
        return (
            f"{event.flow} {event.topic}-{event.partition} halted on driver {event.driver}"
            f" ({event.kind}): {event.reason}"
        )
    if isinstance(event, PartitionResumeRequested):
        start = event.point.describe()
        return f"{event.flow} {event.topic}-{event.partition}: resume from {start} requested"
    if isinstance(event, RecordsLost):
        return (
            f"{event.flow} {event.topic}-{event.partition}: retention deleted source offsets"
            f" {event.first_offset}..{event.end_offset - 1} before they were copied"
            f" ({event.end_offset - event.first_offset} offsets, seen by driver {event.driver})"
        )
    if isinstance(event, DriverLeft):
        return f"driver {event.driver} left: {event.reason}"
    if isinstance(event, AssignmentChanged):
        return (
            f"assignment generation {event.generation}: {len(event.assigned)} assigned,"
            f" {len(event.revoked)} revoked"
        )
    return f"{event.TYPE} v{event.VERSION}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
