"""srm-control's command line: the client options every subcommand takes, the subcommands
and their flags, and the help text with examples."""

from __future__ import annotations

import argparse
from pathlib import Path

from srm_common.domain.resume import RESUME_MODES

from srm_control import PROG, acl_commands, audit_command, restore
from srm_control.partition_listing import DEFAULT_LIMIT

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


def client_options() -> argparse.ArgumentParser:
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


def split(value: str | None) -> list[str]:
    """The items of a comma-separated flag value (``--add a,b``), blanks dropped."""
    return [item for item in (value or "").split(",") if item.strip()]


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


def parser() -> argparse.ArgumentParser:
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
        choices=RESUME_MODES,
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
