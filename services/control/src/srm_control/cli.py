"""`srm-control`: SRM's command line for what is replicated, plus the audit trail.

``topics`` and ``groups`` edit or list a flow's allow list ("whitelist") and deny list
("blacklist") with SRM's flags; the leader of the log of the flow's target cluster
validates each change and records it in that log (on the target), and the running
drivers follow within seconds. A command touches only its flow's target: a cluster that
is down elsewhere changes nothing for it. ``partitions`` lists the partitions a driver
halted (and records lost to retention) and resumes one from an explicit choice.
``audit`` replays every log (one per target, and the single log of an earlier release)
as one history in time, each entry naming its log, or with ``--at`` each log's whole
state at a moment. ``acls --print`` prints the ACLs each service needs on each cluster,
from the configuration alone (:mod:`srm_control.acl_commands`).
"""

from __future__ import annotations

import argparse
import getpass
import os
import socket
import sys
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import cast

from srm_common import telemetry
from srm_common.adapters.cluster_probe import refused_clusters
from srm_common.adapters.http_client import HttpCredentials, credentials
from srm_common.adapters.kafka_log import read_log
from srm_common.cli_support import exit_code, fail, load_or_exit, parse_pairs
from srm_common.config.control import ControlPlane, ControlSettings, control_plane
from srm_common.config.model import SrmConfig
from srm_common.control.events import describe
from srm_common.control.state import ControlState, replay
from srm_common.errors import SrmError

from srm_control import acl_commands, audit_command, group_commands, restore
from srm_control.audit import format_time
from srm_control.delivery import Applied, Delivery, NotApplied, Unknown, post_json
from srm_control.partition_listing import DEFAULT_LIMIT, partition_lines

PROG = "srm-control"
EXIT_NOT_APPLIED = 1
EXIT_UNKNOWN = 3
DEFAULT_TIMEOUT_S = 30.0

EPILOG = """\
examples:
  srm-control topics --source primary --target backup --add orders,payments
  srm-control topics --source primary --target backup --add 'sales\\..*'   (a regex)
  srm-control topics --source primary --target backup --add-blacklist 'sales\\.tmp.*'
  srm-control topics --source primary --target backup --remove orders
  srm-control topics --source primary --target backup --list
  srm-control groups --source primary --target backup --add 'billing-.*'
  srm-control partitions --source primary --target backup --list      halted, and why
  srm-control partitions --source primary --target backup --list --topic orders --all
  srm-control partitions --source primary --target backup --resume orders:3 --from copy-end
  srm-control offsets --source primary --target backup --group orders-app --export > g.csv
  srm-control failover --group orders-app --from primary --to backup
  srm-control failback --group orders-app --from backup --to primary
  srm-control audit                                  configuration changes, oldest first
  srm-control audit --all                            ... with membership and assignment
  srm-control audit --at 2026-11-20T09:30:00Z        the whole state at that moment
  srm-control audit --target backup                  only the log of the flows into backup
  srm-control audit --db sqlite:///srm-gateway.db   from the gateway's read model
  srm-control restore --from-db postgresql+psycopg://srm:PASSWORD@db/srm   after 'event log lost'
  srm-control acls --print                           the ACLs SRM needs (kafka-acls.sh)
  srm-control acls --print --format table --cluster backup

The configuration comes from --config, else $SRM_CONFIG, else ./srm.yaml, else
./deploy/local/srm.yaml (the stack `make up` runs). Changes take effect on the running
drivers within seconds; denylist entries win over allowlist entries. Each target
cluster holds the log of the flows into it: a change to S->T needs only T (and a
coordinator that serves T's log) to be up.

A change is sent to the coordinator leader, again (under the same command id, so it
applies once) across a leader change or a lost answer, until --timeout (30 s).
exit status: 0 applied (or nothing to change, or listed); 1 not applied (refused, or no
leader took it: nothing changed); 2 bad flags or configuration; 3 unknown: the leader
took the command and its answer was lost (check with --list or audit).
"""


def main(argv: Sequence[str] | None = None) -> int:
    telemetry.setup(PROG)
    try:
        return exit_code(_run, argv)
    finally:
        telemetry.current().flush()  # at most 2 s, only when OTLP is configured


def _run(argv: Sequence[str] | None) -> int:
    # SRM's scripts put the client options before the subcommand and its docs after it:
    # they are taken out wherever they are, then the rest is parsed.
    options, rest = _client_options().parse_known_args(argv)
    args = _parser().parse_args(rest, namespace=options)
    _GATEWAY[:] = [args.gateway] if args.gateway else []
    _HTTP_OPTIONS.clear()
    _HTTP_OPTIONS.update(
        {k: getattr(args, k) for k in ("token_file", "ca_file", "cert_file") if getattr(args, k)}
    )
    config = load_or_exit(PROG, _config_path(args.config), [])
    _HTTP_EXTRA.clear()
    _HTTP_EXTRA.update(config.extra)
    try:
        plane = control_plane(config)
    except SrmError as exc:
        fail(PROG, str(exc))
    plane = _with_overrides(plane, args)
    offline = getattr(args, "db", None) or getattr(args, "from_db", None)
    if args.command != "acls" and not offline:
        # A wrong password or an untrusted certificate is one line, not a retry loop.
        touched = [args.target] if getattr(args, "target", None) in plane.logs else plane.targets
        for line in refused_clusters(config, list(touched), timeout_s=5.0):
            fail(PROG, line)
    if args.command == "audit":
        return audit_command.run(args, plane)
    if args.command == "restore":
        return restore.run(args, config, plane)
    if args.command == "acls":
        return acl_commands.run(args, config)
    if args.command == "partitions":
        return _partitions(args, config, plane)
    if args.command == "offsets":
        return group_commands.offsets(args, config)
    if args.command in ("failover", "failback"):
        return group_commands.failover(args, config)
    return _patterns(args, config, plane)


def _config_path(given: Path | None) -> Path:
    if given is not None:
        return given
    for candidate in (os.environ.get("SRM_CONFIG"), "srm.yaml", "deploy/local/srm.yaml"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    fail(PROG, "no configuration found: pass --config FILE or set SRM_CONFIG")


def _with_overrides(plane: ControlPlane, args: argparse.Namespace) -> ControlPlane:
    """``--props`` for every log's client; ``--bootstrap-servers`` for the one cluster a
    command names (its ``--target``), refused where it would be ambiguous."""
    try:
        props = parse_pairs(_split(args.props), "--props", "security.protocol=SSL")
    except ValueError as exc:
        fail(PROG, str(exc))
    plane = plane.with_client(props)
    if args.bootstrap_servers:
        target = getattr(args, "target", None)
        if target not in plane.logs:
            fail(
                PROG,
                "--bootstrap-servers names one cluster: give --target ALIAS too (each target"
                " cluster holds the log of the flows into it)",
            )
        servers = {"bootstrap.servers": args.bootstrap_servers}
        log = plane.log(target)
        plane = replace(
            plane, logs={**plane.logs, target: replace(log, client={**log.client, **servers})}
        )
    return plane


def _split(value: str | None) -> list[str]:
    return [item for item in (value or "").split(",") if item.strip()]


def _state(settings: ControlSettings) -> ControlState:
    try:
        return replay(read_log(settings, timeout=15))
    except SrmError as exc:
        fail(PROG, str(exc), status=1)


# -- topics / groups ---------------------------------------------------------------------


def _log_of(plane: ControlPlane, flow: str) -> ControlSettings:
    settings = plane.log_of(flow)
    if settings is None:
        fail(PROG, f"no replication {flow} is configured")
    return settings


def _flow(args: argparse.Namespace, config: SrmConfig) -> str:
    for alias in (args.source, args.target):
        if alias not in config.clusters:
            fail(
                PROG, f"unknown cluster alias {alias!r}; known aliases: {', '.join(config.aliases)}"
            )
    if args.source == args.target:
        fail(PROG, "--source and --target must be different clusters")
    return f"{args.source}->{args.target}"


def _patterns(args: argparse.Namespace, config: SrmConfig, plane: ControlPlane) -> int:
    flow = _flow(args, config)
    settings = _log_of(plane, flow)
    actions = [
        (action, _split(getattr(args, action.replace("-", "_"))))
        for action in ("add", "remove", "add-blacklist", "remove-blacklist")
        if getattr(args, action.replace("-", "_")) is not None
    ]
    if not actions and not args.list:
        fail(
            PROG,
            f"say what to do: --add, --remove, --add-blacklist, --remove-blacklist or"
            f" --list (see {PROG} {args.command} --help)",
        )
    for action, patterns in actions:
        if not patterns:
            fail(PROG, f"--{action} needs one or more names or regexes, comma separated")
    state = _state(settings) if actions or args.list else ControlState()
    for action, patterns in actions:
        with telemetry.span(f"{PROG} {args.command} --{action}", attributes={"srm.flow": flow}):
            _change(args, settings, state, flow, action, patterns)
    if args.list:
        if actions:
            state = _state(settings)
        _print_lists(state, flow, args.command)
    return 0


def _change(
    args: argparse.Namespace,
    settings: ControlSettings,
    state: ControlState,
    flow: str,
    action: str,
    patterns: list[str],
) -> None:
    trace_id = telemetry.trace_id_now()
    if trace_id and telemetry.current().exporting:
        print(f"{PROG}: trace_id={trace_id}", file=sys.stderr)
    body = {
        "flow": flow,
        "kind": args.command,
        "action": action,
        "patterns": patterns,
        "by": f"{getpass.getuser()}@{socket.gethostname()} via srm-control"[:200],
        "request_id": uuid.uuid4().hex,
    }
    _print_outcome(
        _send(state, settings, "/v1/commands/patterns", body, args.timeout), flow, patterns
    )


def _send(
    state: ControlState,
    settings: ControlSettings,
    path: str,
    body: dict[str, object],
    timeout: float,
) -> Applied:
    """Deliver a command to the leader (``srm_control.delivery``): what it applied,
    or exit 1 (not applied) or 3 (unknown) with one line."""
    gateway = (_GATEWAY[0] if _GATEWAY else os.environ.get("SRM_GATEWAY_URL", "")).strip()
    if state.leader is None and not gateway:
        fail(
            PROG,
            f"not applied: no coordinator has ever led the log of {settings.name} (the flows"
            f" into {settings.cluster}): start srm-coordinator (make up starts two)",
            status=EXIT_NOT_APPLIED,
        )
    creds = _credentials()
    delivery = Delivery(
        post=lambda url, body, timeout: post_json(url, body, timeout, creds),
        # Through the gateway (--gateway, $SRM_GATEWAY_URL), which finds the leader itself.
        leader_url=lambda wait: gateway.rstrip("/") or _leader_url(settings, wait),
        applied_in_log=lambda request_id, wait: _applied_in_log(settings, request_id, wait),
    )
    first = gateway.rstrip("/") or (state.leader.url if state.leader else None)
    outcome = delivery.send(first, path, body, timeout)
    if isinstance(outcome, NotApplied):
        hint = ""
        if creds.token is None and "Bearer" in outcome.reason:
            hint = f" ({PROG} found no token: pass --token-file FILE or set SRM_TOKEN_FILE)"
        fail(PROG, f"not applied: {outcome.reason}{hint}", status=EXIT_NOT_APPLIED)
    if isinstance(outcome, Unknown):
        fail(PROG, f"unknown: {outcome.reason}", status=EXIT_UNKNOWN)
    return outcome


def _credentials() -> HttpCredentials:
    """The token (and TLS files) srm-control presents to the leader: --token-file, else
    $SRM_TOKEN_FILE, else the file `make up` writes for srm-control."""
    options = _HTTP_OPTIONS
    run = Path(os.environ.get("SRM_RUN_DIR") or ".run")
    try:
        return credentials(
            _HTTP_EXTRA,
            token_file=options.get("token_file"),
            defaults=(run / "http" / "srm-control.token",),
            ca_file=options.get("ca_file"),
            cert_file=options.get("cert_file"),
        )
    except SrmError as exc:
        fail(PROG, str(exc))


def _leader_url(settings: ControlSettings, wait: float) -> str | None:
    """The leader the event log names now; None when none does or it cannot be read."""
    try:
        leader = replay(read_log(settings, timeout=min(wait, 15))).leader
    except SrmError:
        return None
    return leader.url if leader is not None else None


def _applied_in_log(settings: ControlSettings, request_id: str, wait: float) -> list[str] | None:
    """What the log holds under command id ``request_id`` ([] nothing; None: unreadable)."""
    try:
        envelopes = read_log(settings, timeout=min(wait, 15))
    except SrmError:
        return None
    if request_id not in replay(envelopes).commands:
        return []
    return [describe(e) for e in envelopes if e.command_id == request_id]


def _print_outcome(applied: Applied, flow: str, patterns: Sequence[str]) -> None:
    answer = applied.answer
    if answer.get("outcome") == "already applied":
        before = answer.get("applied")
        record = cast(dict[str, object], before) if isinstance(before, dict) else {}
        at_ms, by = record.get("at_ms"), record.get("by")
        when = f" at {format_time(at_ms)} by {by}" if isinstance(at_ms, int) else ""
        print(f"{flow}: applied{when} (an earlier attempt of this command took effect)")
        return
    for line in applied.changes:
        print(line)
    if not applied.changes:
        print(f"{flow}: nothing to change ({', '.join(patterns)} already as asked)")


def _print_lists(state: ControlState, flow: str, kind: str) -> None:
    current = state.flow(flow)
    allow = current.topics if kind == "topics" else current.groups
    deny = current.topics_exclude if kind == "topics" else current.groups_exclude
    print(f"{flow} ({'enabled' if current.enabled else 'disabled'})")
    print("Current whitelist:")
    for pattern in allow:
        print(f"  {pattern}")
    print("Current blacklist:")
    for pattern in deny:
        print(f"  {pattern}")
    tasks = state.tasks.get(flow)
    if kind == "topics":
        topics = sorted({t for task in (tasks.source if tasks else ()) for t, _ in task.partitions})
        print(f"Replicated now ({len(topics)} topics):")
    else:
        topics = sorted({g for task in (tasks.checkpoint if tasks else ()) for g in task.groups})
        print(f"Matched now ({len(topics)} groups):")
    for name in topics:
        print(f"  {name}")


# -- partitions --------------------------------------------------------------------------


def _partitions(args: argparse.Namespace, config: SrmConfig, plane: ControlPlane) -> int:
    flow = _flow(args, config)
    settings = _log_of(plane, flow)
    if args.resume is None and not args.list:
        fail(
            PROG,
            "say what to do: --list or --resume TOPIC:PARTITION --from ..."
            f" (see {PROG} partitions --help)",
        )
    if args.resume is not None:
        topic, sep, number = args.resume.rpartition(":")
        if not sep or not topic or not number.isdigit():
            fail(
                PROG,
                f"--resume {args.resume!r}: name the partition as TOPIC:PARTITION, e.g. orders:3",
            )
        if args.from_ is None:
            fail(PROG, "--resume needs --from: copy-end, source-start, source-end or offset")
        if (args.from_ == "offset") != (args.offset is not None):
            fail(PROG, "give --offset N exactly when resuming --from offset")
        state = _state(settings)
        body = {
            "flow": flow,
            "topic": topic,
            "partition": int(number),
            "mode": args.from_,
            "offset": args.offset,
            "by": f"{getpass.getuser()}@{socket.gethostname()} via srm-control"[:200],
            "request_id": uuid.uuid4().hex,
        }
        with telemetry.span(f"{PROG} partitions --resume", attributes={"srm.flow": flow}):
            resumed = _send(state, settings, "/v1/commands/resume", body, args.timeout)
        _print_outcome(resumed, flow, [args.resume])
    if args.list:
        limit = None if args.all else args.limit
        for line in partition_lines(_state(settings), flow, limit=limit, topic=args.topic):
            print(line)
    return 0


# -- audit -------------------------------------------------------------------------------


# -- parser ------------------------------------------------------------------------------


# --token-file, --ca-file, --cert-file and the config's top-level keys (the listeners'
# truststore) of this run, read where a command is sent.
_HTTP_OPTIONS: dict[str, Path] = {}
_GATEWAY: list[str] = []  # --gateway URL, when given
_HTTP_EXTRA: dict[str, str] = {}


def _client_options() -> argparse.ArgumentParser:
    # No abbreviations: these are picked out of the whole command line first, where
    # failover's --to would otherwise be taken for --token-file.
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    common.add_argument("--config", type=Path)
    common.add_argument("--token-file", type=Path)
    common.add_argument("--gateway", metavar="URL")
    common.add_argument("--ca-file", type=Path)
    common.add_argument("--cert-file", type=Path)
    common.add_argument("--bootstrap-servers")
    common.add_argument("--props")
    common.add_argument("--producer-props")
    common.add_argument("--consumer-props")
    return common


CLIENT_OPTIONS = """\
options of every subcommand (before or after it):
  --config FILE              srm.yaml or SRM/MM2 properties (default: see below)
  --bootstrap-servers H:P    the bootstrap servers of the --target cluster (whose log the
                             command reads), overriding the config
  --props K=V,...            client settings for the clusters holding the logs
                             (security.protocol=SSL)
  --producer-props, --consumer-props K=V,...   accepted for SRM compatibility; use --props
  --token-file FILE          the token commands bear (default: $SRM_TOKEN_FILE, else
                             .run/http/srm-control.token, written by `make up`)
  --ca-file FILE             the CA of HTTPS coordinators (default: $SRM_HTTP_CA_FILE,
                             else listeners.https.ssl.truststore.* of the config)
  --cert-file FILE           a client certificate and its key, PEM ($SRM_HTTP_CERT_FILE)
  --gateway URL              send changes through srm-api-gateway at URL (default:
                             $SRM_GATEWAY_URL; else straight to the coordinator leader)

"""


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1, e.g. --limit 50")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to 3600")
    return value


def _timeout_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="how long to keep trying to reach the leader, across a leader change"
        f" (default {DEFAULT_TIMEOUT_S:g})",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Change and list what SRM replicates; show the audit trail.",
        epilog=CLIENT_OPTIONS + EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="{topics,groups,partitions,offsets,failover,failback,audit,restore,acls}",
    )
    for kind in ("topics", "groups"):
        p = sub.add_parser(
            kind,
            help=f"edit or list the {kind} allow/deny lists of a flow",
            epilog=CLIENT_OPTIONS + EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument("--source", required=True, help="source cluster alias")
        p.add_argument("--target", required=True, help="target cluster alias")
        p.add_argument("--add", metavar="A,B", help="add names or regexes to the allowlist")
        p.add_argument("--remove", metavar="A,B", help="remove entries from the allowlist")
        p.add_argument("--add-blacklist", metavar="A,B", help="add entries to the denylist")
        p.add_argument("--remove-blacklist", metavar="A,B", help="remove entries from the denylist")
        p.add_argument("--list", action="store_true", help="print the lists and what matches now")
        _timeout_option(p)
    p = sub.add_parser(
        "partitions",
        help="list halted partitions of a flow, or resume one from an explicit choice",
        epilog=CLIENT_OPTIONS + EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--source", required=True, help="source cluster alias")
    p.add_argument("--target", required=True, help="target cluster alias")
    p.add_argument("--list", action="store_true", help="halted partitions, why, and losses")
    p.add_argument(
        "--limit",
        type=_positive,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"--list: at most N of each (default {DEFAULT_LIMIT}; the longest halted, the"
        " newest resumes, the largest losses first), after their counts",
    )
    p.add_argument("--all", action="store_true", help="--list: every one of them")
    p.add_argument("--topic", metavar="TOPIC", help="--list: only this topic's partitions")
    p.add_argument("--resume", metavar="TOPIC:PARTITION", help="resume this halted partition")
    p.add_argument(
        "--from",
        dest="from_",
        choices=("copy-end", "source-start", "source-end", "offset"),
        help="copy-end: after what the copy holds, keeping what the remote partition holds;"
        " source-start / source-end: the source partition's start / end; offset: --offset N",
    )
    p.add_argument("--offset", type=int, metavar="N", help="the source offset for --from offset")
    _timeout_option(p)
    o = sub.add_parser(
        "offsets",
        help="translated consumer group offsets of a flow, from its checkpoints",
        epilog=CLIENT_OPTIONS + EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    o.add_argument("--source", required=True, help="source cluster alias")
    o.add_argument("--target", required=True, help="target cluster alias")
    o.add_argument("--group", help="the consumer group")
    o.add_argument("--groups", metavar="REGEX", help="every group matching REGEX")
    o.add_argument(
        "--export",
        action="store_true",
        help="CSV for kafka-consumer-groups --reset-offsets --from-file F --execute",
    )
    for verb, what in (
        ("failover", "move a consumer group to another cluster, offsets translated exactly"),
        ("failback", "bring a consumer group home after a failover (same checks and rules)"),
    ):
        f = sub.add_parser(
            verb,
            help=what,
            epilog=CLIENT_OPTIONS + EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        f.add_argument("--group", required=True, help="the consumer group")
        f.add_argument("--from", dest="from_", required=True, metavar="ALIAS", help="where it ran")
        f.add_argument("--to", required=True, metavar="ALIAS", help="where it continues")
        f.add_argument(
            "--allow-inexact",
            action="store_true",
            help="partitions with no exact translation take the nearest sync below"
            " (records may be read again; never skipped)",
        )
        f.add_argument(
            "--allow-active",
            action="store_true",
            help="translate even while the group still has members on --from",
        )
        f.add_argument("--dry-run", action="store_true", help="print, change nothing")
    audit_command.add_parser(sub, CLIENT_OPTIONS + EPILOG)
    restore.add_parser(sub, CLIENT_OPTIONS + EPILOG)
    acl_commands.add_parser(sub, CLIENT_OPTIONS + EPILOG)
    return parser
