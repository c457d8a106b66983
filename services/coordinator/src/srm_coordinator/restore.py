"""``srm-control restore``: a new event log in place of a lost one.

When the event log is lost (its topic deleted or recreated), coordinators and drivers
keep their last state and say ``event log lost``. This writes a new log that restores
the configuration the lost log held, taken from the gateway's SQL read model
(``--from-db URL``, its ``--db-url``, replayed to its end) or from an export of
``srm-control audit --at TIME --json`` (``--from-audit FILE``)::

    offset  event                                        by
    0       log.started  L2, restored_from L1, source    alice@host via srm-control restore
    2       config.applied  (the file's baseline)        (same)
    4       flow.enabled primary->backup                 (same)
    6       topics.allowed primary->backup: orders, ...  (same)
    ...     partition.halted / resume_requested / records.lost, as the lost log had them

Only configuration is restored: switches and lists of every flow (srm-control's changes
included), the config file's baseline, halted partitions, resumes asked for and records
lost to retention. Task configs, membership and assignment are not: the coordinator that
leads the restored log plans them again (after waiting out the lost log's drivers) and
drivers rejoin it. Readers that knew the lost log take up the restored one by itself
(its ``restored_from``); the audit shows the restore and by whom.
"""

from __future__ import annotations

import argparse
import getpass
import json
import socket
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from confluent_kafka import KafkaException
from srm_common.adapters import kafka_clients
from srm_common.adapters.kafka_log import (
    EventLogReader,
    EventLogWriter,
    ensure_control_topics,
)
from srm_common.cli_support import fail
from srm_common.config.control import ControlSettings
from srm_common.control.events import (
    ConfigApplied,
    Envelope,
    Event,
    FlowBaseline,
    FlowDisabled,
    FlowEnabled,
    LogStarted,
    PartitionHalted,
    PartitionResumeRequested,
    RecordsLost,
    decode,
    describe,
    pattern_event_class,
)
from srm_common.control.state import ControlState, FlowState, HaltInfo, ResumeInfo, replay
from srm_common.errors import SrmError

PROG = "srm-control"
LISTS = (
    ("topics", "allow", "topics"),
    ("topics", "deny", "topics_exclude"),
    ("groups", "allow", "groups"),
    ("groups", "deny", "groups_exclude"),
)


class RestoreError(SrmError):
    """The source cannot be restored from (one line: what and where)."""


def add_parser(sub: argparse._SubParsersAction, epilog: str) -> None:  # type: ignore[type-arg]
    r = sub.add_parser(
        "restore",
        help="write a new event log restoring a lost one's configuration",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = r.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from-db",
        metavar="URL",
        help="the gateway's SQL read model (its --db-url; read only)",
    )
    source.add_argument(
        "--from-audit",
        metavar="FILE",
        type=Path,
        help="an export of `srm-control audit --at TIME --json`",
    )
    r.add_argument(
        "--replace",
        action="store_true",
        help="delete the events topic and write the restored log in its place even if it"
        " holds events (another log, or one of a wrong shape)",
    )
    r.add_argument("--dry-run", action="store_true", help="print the events, write nothing")


# -- the restored events (pure) --------------------------------------------------------


def restored_events(
    lost: ControlState, *, log_id: str, source: str, by: str, now_ms: int
) -> list[Envelope]:
    """The events of a new log that restores ``lost``'s configuration (module docstring)."""
    events: list[Event] = [LogStarted(log_id, lost.log_id or "", source)]
    if lost.config_path is not None:
        events.append(ConfigApplied(lost.config_path, dict(lost.baseline)))
    for name, flow in sorted(lost.flows.items()):
        events.append(FlowEnabled(name) if flow.enabled else FlowDisabled(name))
        for kind, list_, field in LISTS:
            patterns = flow.patterns(field)
            if patterns:
                events.append(pattern_event_class(kind, list_, True)(name, patterns))  # type: ignore[arg-type]
    for _key, h in sorted(lost.halts.items()):
        events.append(PartitionHalted(h.flow, h.topic, h.partition, h.kind, h.reason, h.driver))
    for _key, r in sorted(lost.resumes.items()):
        events.append(
            PartitionResumeRequested(r.flow, r.topic, r.partition, r.mode, r.offset, r.request_id)
        )
    for key, ranges in sorted(lost.losses.items()):
        flow, topic, partition = key.split("|")
        for first, end in ranges:
            driver = "unknown (restored)"
            events.append(RecordsLost(flow, topic, int(partition), first, end, driver))
    return [Envelope(event, now_ms, by) for event in events]


def configuration(state: ControlState) -> dict[str, object]:
    """What a restore brings back, to compare a restored log with its source."""
    return {
        "config_path": state.config_path,
        "baseline": dict(state.baseline),
        "flows": dict(state.flows),
        "halts": {k: (h.kind, h.reason, h.driver) for k, h in state.halts.items()},
        "resumes": {k: (r.mode, r.offset, r.request_id) for k, r in state.resumes.items()},
        "losses": dict(state.losses),
    }


# -- sources -----------------------------------------------------------------------------


def from_db(url: str) -> tuple[ControlState, str]:
    """The state the gateway's read model replays to, and how to name it in the log."""
    from srm_common.adapters.sql.projection import SqlProjection, redact_url

    with SqlProjection(url, migrate=False) as projection:
        rows = projection.values_until()
    if not rows:
        raise RestoreError(f"the SQL projection {redact_url(url)} holds no events")
    state = replay(decode(value, offset=offset) for offset, value in rows)
    return state, f"SQL projection {redact_url(url)} up to row {rows[-1][0]}"


def from_audit(path: Path) -> tuple[ControlState, str]:
    """The state an ``audit --at TIME --json`` export holds, and how to name it."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RestoreError(f"cannot read the audit export {path}: {exc}") from exc
    where = f"audit export {path}"
    state = _object(_object(document, "", where).get("state"), "state", where)
    at = document.get("at", "?")
    log_id = state.get("log_id")
    config_path = state.get("config_path")
    lost = ControlState(
        log_id=log_id if isinstance(log_id, str) else None,
        config_path=config_path if isinstance(config_path, str) else None,
        baseline={
            name: FlowBaseline(
                **_lists(_object(v, f"baseline.{name}", where), f"baseline.{name}", where)
            )
            for name, v in _object(state.get("baseline", {}), "baseline", where).items()
        },
        flows={
            name: FlowState(**_lists(_object(v, f"flows.{name}", where), f"flows.{name}", where))
            for name, v in _object(state.get("flows", {}), "flows", where).items()
        },
        halts={
            key: HaltInfo(**_fields(v, HaltInfo, f"halts.{key}", where))
            for key, v in _object(state.get("halts", {}), "halts", where).items()
        },
        resumes={
            key: ResumeInfo(**_fields(v, ResumeInfo, f"resumes.{key}", where))
            for key, v in _object(state.get("resumes", {}), "resumes", where).items()
        },
        losses={
            key: tuple((int(first), int(end)) for first, end in ranges)
            for key, ranges in _object(state.get("losses", {}), "losses", where).items()
        },
    )
    return lost, f"audit export {path.name} (state at {at})"


def _object(value: object, name: str, where: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise RestoreError(f"{where}: {name or 'the document'} must be a JSON object")
    return cast(dict[str, object], value)


def _lists(value: Mapping[str, object], name: str, where: str) -> dict[str, object]:
    fields: dict[str, object] = {"enabled": bool(value.get("enabled", False))}
    for field in ("topics", "topics_exclude", "groups", "groups_exclude"):
        items = value.get(field, [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise RestoreError(f"{where}: {name}.{field} must be a list of strings")
        fields[field] = tuple(cast(list[str], items))
    return fields


def _fields(value: object, cls: type, name: str, where: str) -> dict[str, object]:
    entries = _object(value, name, where)
    wanted = cls.__dataclass_fields__  # type: ignore[attr-defined]
    missing = [f for f in wanted if f not in entries]
    if missing:
        raise RestoreError(f"{where}: {name} lacks {', '.join(missing)}")
    return {f: entries[f] for f in wanted}


# -- the command -------------------------------------------------------------------------


def run(args: argparse.Namespace, settings: ControlSettings) -> int:
    try:
        lost, source = from_db(args.from_db) if args.from_db else from_audit(args.from_audit)
    except SrmError as exc:
        fail(PROG, str(exc), status=1)
    by = f"{getpass.getuser()}@{socket.gethostname()} via srm-control restore"
    envelopes = restored_events(
        lost, log_id=uuid.uuid4().hex, source=source, by=by, now_ms=int(time.time() * 1000)
    )
    restored = replay(
        Envelope(e.event, e.at_ms, e.by, e.command_id, 2 * i) for i, e in enumerate(envelopes)
    )
    assert configuration(restored) == configuration(lost), "the restore must rebuild its source"
    if args.dry_run:
        for envelope in envelopes:
            print(describe(envelope))
        return 0
    try:
        _make_room(settings, lost.log_id, replace=args.replace)
        writer = EventLogWriter(settings, client_id=f"srm-control-restore-{uuid.uuid4().hex[:8]}")
        try:
            writer.fence()  # any coordinator still writing an old log can no longer commit
            writer.append(envelopes)
        finally:
            writer.close()
    except SrmError as exc:
        fail(PROG, str(exc), status=1)
    start = envelopes[0].event
    assert isinstance(start, LogStarted)
    print(describe(envelopes[0]))
    print(
        f"{len(envelopes)} events: {len(lost.flows)} flows with their lists,"
        f" {len(lost.halts)} halted partitions, {len(lost.resumes)} resumes,"
        f" {sum(len(r) for r in lost.losses.values())} losses to retention"
    )
    print(
        f"Coordinators and drivers that knew log {start.restored_from or '(without an id)'}"
        " take this one up within seconds; the leader plans task configs again and drivers"
        " rejoin (tasks start after the lost log's drivers are waited out)."
    )
    return 0


def _make_room(settings: ControlSettings, lost_id: str | None, *, replace: bool) -> None:
    """An events topic to write the restored log into: missing (created), empty, or (with
    ``replace``) deleted and created again; RestoreError otherwise."""
    topic = settings.events_topic
    admin = kafka_clients.admin(dict(settings.client))
    try:
        exists = topic in admin.list_topics(timeout=15).topics
    except KafkaException as exc:
        raise RestoreError(f"cannot reach the control cluster: {exc}") from exc
    if exists and not replace:
        reader = EventLogReader(settings, client_id=f"srm-control-restore-{time.time_ns()}")
        try:
            held = reader.read_to_end(15)
            problem, log_id = reader.problem, reader.log_id
        finally:
            reader.close()
        if held or problem is not None:
            what = f"log {log_id}" if log_id else "a log without an id"
            if problem is not None and problem.kind == "newer":
                what = "events of a newer SRM"
            same = lost_id is not None and log_id == lost_id
            raise RestoreError(
                f"the events topic {topic} holds {len(held)} events of {what}"
                + (" (the log the source holds: it is not lost)" if same else "")
                + "; --replace deletes it and writes the restored log in its place"
            )
    if exists and replace:
        try:
            admin.delete_topics([topic], operation_timeout=30)[topic].result(30)
        except KafkaException as exc:
            raise RestoreError(f"cannot delete {topic}: {exc}") from exc
        deadline = time.monotonic() + 30
        while topic in admin.list_topics(timeout=15).topics:
            if time.monotonic() > deadline:
                raise RestoreError(f"{topic} was not deleted within 30 s")
            time.sleep(0.2)
    deadline = time.monotonic() + 30
    while True:
        try:
            ensure_control_topics(settings)
            return
        except SrmError:
            # Just deleted: the brokers may still be removing it (TOPIC_ALREADY_EXISTS or
            # no leader yet) for a moment.
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
