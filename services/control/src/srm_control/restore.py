"""``srm-control restore``: a new event log in place of a lost one, per target cluster.

Each target cluster holds the log of the flows into it. When one is lost (its topic
deleted or recreated), coordinators and drivers of that target keep their last state and
say ``event log lost``; the other targets' logs are not concerned. This writes a new log
for each target named (``--target``; by default every target whose log topic is missing
or empty) that restores the configuration of its flows, taken from the gateway's SQL
read model (``--from-db URL``, its ``--db-url``, every log replayed to its end) or from
an export of ``srm-control audit --at TIME --json`` (``--from-audit FILE``)::

    offset  event                                              by
    0       log.started  L2 (target backup), restored_from L1  alice@host via srm-control restore
    2       config.applied  (the file's baseline of its flows) (same)
    4       flow.enabled primary->backup                       (same)
    6       topics.allowed primary->backup: orders, ...        (same)
    ...     partition.halted / resume_requested / records.lost, as the lost log had them

Only configuration is restored (:mod:`srm_common.control.carry`): task configs,
membership and assignment are not; the coordinator that leads the restored log plans
them again (after waiting out the lost log's drivers) and drivers rejoin it. Readers
that knew the lost log take up the restored one by themselves (its ``restored_from``);
the audit shows the restore and by whom. A source older than per-target logs (a read
model or an export of the single log of an earlier release) restores any target's
flows from that one log.
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
from srm_common.adapters.control_topics import ensure_control_topics
from srm_common.cli_support import fail
from srm_common.config.control import LEGACY_PREFIX, ControlPlane, ControlSettings
from srm_common.config.model import SrmConfig
from srm_common.control.carry import configuration, configuration_events, into
from srm_common.control.events import (
    Envelope,
    FlowBaseline,
    LogStarted,
    decode,
    describe,
)
from srm_common.control.flow_records import FlowState
from srm_common.control.state import ControlState, replay
from srm_common.control.state_records import HaltInfo, ResumeInfo
from srm_common.errors import SrmError

from srm_control.clients import KafkaClients

PROG = "srm-control"
# The single log of an earlier release, in a source: it held every flow.
SINGLE = ""


class RestoreError(SrmError):
    """The source cannot be restored from (one line: what and where)."""


class NotLost(RestoreError):
    """The events topic holds a log: nothing to restore there without ``--replace``."""


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
        "--target",
        metavar="ALIAS[,ALIAS...]",
        help="the target clusters whose log to restore (default: every target whose log"
        " topic is missing or empty)",
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
    lost: ControlState, *, log_id: str, source: str, by: str, now_ms: int, target: str
) -> list[Envelope]:
    """The events of ``target``'s new log, restoring ``lost``'s configuration of the
    flows into ``target`` (module docstring)."""
    events = [
        LogStarted(log_id, lost.log_id or "", source, target),
        *configuration_events(lost, into(target)),
    ]
    return [Envelope(event, now_ms, by) for event in events]


def lost_state(states: Mapping[str, ControlState], target: str) -> ControlState | None:
    """What a source says of ``target``'s flows: its log, else the single log of an
    earlier release (which held every flow); None when it holds neither."""
    single = [s for name, s in states.items() if name == SINGLE or name.startswith(LEGACY_PREFIX)]
    return states.get(target) or (single[0] if single else None)


# -- sources -----------------------------------------------------------------------------


def from_db(url: str) -> tuple[dict[str, ControlState], str]:
    """The state of every log the gateway's read model replays to (by log; ``""``: the
    single log of an earlier release), and how to name the source in the log."""
    from srm_common.adapters.sql.projection import SqlProjection, redact_url

    with SqlProjection(url, migrate=False) as projection:
        rows = projection.values_by_log()
    if not rows:
        raise RestoreError(f"the SQL projection {redact_url(url)} holds no events")
    states = {
        log: replay(decode(value, offset=offset) for offset, value in values)
        for log, values in rows.items()
    }
    total = sum(len(values) for values in rows.values())
    return states, f"SQL projection {redact_url(url)} ({total} rows)"


def from_audit(path: Path) -> tuple[dict[str, ControlState], str]:
    """The state of every log an ``audit --at TIME --json`` export holds (by log; an
    export of one state, from an earlier release, as ``""``), and how to name it."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RestoreError(f"cannot read the audit export {path}: {exc}") from exc
    where = f"audit export {path}"
    top = _object(document, "", where)
    at = top.get("at", "?")
    if "logs" in top:
        logs = _object(top["logs"], "logs", where)
        states = {
            name: _state_of(
                _object(_object(v, f"logs.{name}", where).get("state"), "state", where), where
            )
            for name, v in logs.items()
        }
    else:
        states = {SINGLE: _state_of(_object(top.get("state"), "state", where), where)}
    return states, f"audit export {path.name} (state at {at})"


def _state_of(state: dict[str, object], where: str) -> ControlState:
    log_id = state.get("log_id")
    config_path = state.get("config_path")
    return ControlState(
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


def run(
    args: argparse.Namespace, config: SrmConfig, plane: ControlPlane, clients: KafkaClients
) -> int:
    try:
        states, source = from_db(args.from_db) if args.from_db else from_audit(args.from_audit)
    except SrmError as exc:
        fail(PROG, str(exc), status=1)
    named = [t.strip() for t in (args.target or "").split(",") if t.strip()]
    for target in named:
        if target not in plane.logs:
            fail(PROG, f"--target {target!r} holds no log; targets: {', '.join(plane.targets)}")
    by = f"{getpass.getuser()}@{socket.gethostname()} via srm-control restore"
    restored = 0
    for target in named or list(plane.targets):
        lost = lost_state(states, target)
        if lost is None:
            print(f"{target}: the {source} holds no log of the flows into {target}; skipped")
            continue
        if _restore(args, plane.log(target), lost, source, by, clients, explicit=bool(named)):
            restored += 1
    if not restored and not args.dry_run:
        fail(PROG, "no log restored (see above)", status=1)
    return 0


def _restore(
    args: argparse.Namespace,
    settings: ControlSettings,
    lost: ControlState,
    source: str,
    by: str,
    clients: KafkaClients,
    *,
    explicit: bool,
) -> bool:
    target = settings.cluster
    envelopes = restored_events(
        lost,
        log_id=uuid.uuid4().hex,
        source=source,
        by=by,
        now_ms=int(time.time() * 1000),
        target=target,
    )
    rebuilt = replay(
        Envelope(e.event, e.at_ms, e.by, e.command_id, 2 * i) for i, e in enumerate(envelopes)
    )
    flows = into(target)
    assert configuration(rebuilt, flows) == configuration(lost, flows), "rebuilt from its source"
    if args.dry_run:
        print(f"the log of {target}:")
        for envelope in envelopes:
            print(f"  {describe(envelope)}")
        return True
    try:
        _make_room(settings, lost.log_id, clients, replace=args.replace)
        writer = clients.log_writer(settings, f"srm-control-restore-{uuid.uuid4().hex[:8]}")
        try:
            writer.fence()  # any coordinator still writing an old log can no longer commit
            writer.append(envelopes)
        finally:
            writer.close()
    except NotLost as exc:
        if explicit:
            fail(PROG, f"{target}: {exc}", status=1)
        print(f"{target}: {exc}; skipped")
        return False
    except SrmError as exc:
        fail(PROG, f"{target}: {exc}", status=1)
    start = envelopes[0].event
    assert isinstance(start, LogStarted)
    carried = [f for f in lost.flows if flows(f)]
    print(f"{target}: {describe(envelopes[0])}")
    print(
        f"{target}: {len(envelopes)} events: {len(carried)} flow(s) with their lists,"
        f" {sum(flows(h.flow) for h in lost.halts.values())} halted partitions,"
        f" {sum(flows(r.flow) for r in lost.resumes.values())} resumes,"
        f" {sum(len(r) for k, r in lost.losses.items() if flows(k.split('|')[0]))} losses"
        " to retention"
    )
    print(
        f"{target}: coordinators and drivers that knew log"
        f" {start.restored_from or '(without an id)'} take this one up within seconds; the"
        " leader plans task configs again and drivers rejoin (tasks start after the lost"
        " log's drivers are waited out)."
    )
    return True


def _make_room(
    settings: ControlSettings, lost_id: str | None, clients: KafkaClients, *, replace: bool
) -> None:
    """An events topic to write the restored log into: missing (created), empty, or (with
    ``replace``) deleted and created again; RestoreError otherwise."""
    topic = settings.events_topic
    admin = clients.admin(settings.client)
    try:
        exists = topic in admin.list_topics(timeout=15).topics
    except KafkaException as exc:
        raise RestoreError(f"cannot reach cluster {settings.cluster}: {exc}") from exc
    if exists and not replace:
        reader = clients.log_reader(settings, f"srm-control-restore-{time.time_ns()}")
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
            raise NotLost(
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
