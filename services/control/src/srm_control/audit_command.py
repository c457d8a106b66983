"""``srm-control audit``: the history of changes of every log, or each log's state at a
moment (:mod:`srm_control.audit` renders them).

Every target cluster holds the log of the flows into it; the single log of an earlier
release (``legacy@<alias>``) keeps the history from before the move. The audit reads them
all at once (a log whose cluster does not answer is one line on stderr, the others are
shown) and merges them in time, each entry naming its log; ``--target`` reads one.
"""

from __future__ import annotations

import argparse
import sys

from srm_common.adapters.event_log_reads import read_logs
from srm_common.cli_support import fail
from srm_common.config.control import ControlPlane
from srm_common.control.events import Envelope, decode
from srm_common.control.history import states_at
from srm_common.errors import SrmError

from srm_control.audit import parse_time, render_history, render_states

PROG = "srm-control"


def add_parser(sub: argparse._SubParsersAction, epilog: str) -> None:  # type: ignore[type-arg]
    a = sub.add_parser(
        "audit",
        help="history of changes, or the state at a moment",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument(
        "--at",
        metavar="TIME",
        help="print the complete state at TIME (ISO 8601, e.g. 2026-11-20T09:30:00Z,"
        " or epoch milliseconds)",
    )
    a.add_argument("--since", metavar="TIME", help="history from TIME on")
    a.add_argument("--flow", metavar="S->T", help="only changes of this flow")
    a.add_argument(
        "--target",
        metavar="ALIAS",
        help="only the log of this target cluster (default: every log, merged in time)",
    )
    a.add_argument(
        "--all",
        action="store_true",
        help="include membership and assignment events (default: configuration only)",
    )
    a.add_argument(
        "--db",
        metavar="URL",
        help="read the gateway's SQL read model (its --db-url) instead of Kafka; it keeps"
        " a lost log's history too",
    )
    a.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace, plane: ControlPlane) -> int:
    try:
        at_ms = parse_time(args.at) if args.at else None
        since_ms = parse_time(args.since) if args.since else None
    except ValueError as exc:
        fail(PROG, str(exc))
    if args.target is not None and args.target not in plane.logs:
        fail(PROG, f"--target {args.target!r} holds no log; targets: {', '.join(plane.targets)}")
    if args.db:
        histories = _histories_in_db(args.db, plane)
    else:
        histories = _histories(plane, args.target)
    if args.target is not None:
        histories = {n: h for n, h in histories.items() if n == args.target}
    if at_ms is not None:
        print(render_states(states_at(histories, at_ms), at_ms, as_json=args.json))
    else:
        print(
            render_history(
                histories,
                since_ms=since_ms,
                flow=args.flow,
                everything=args.all,
                as_json=args.json,
            )
        )
    return 0


def _histories(plane: ControlPlane, target: str | None) -> dict[str, list[Envelope]]:
    """Every log's events (one ``target``'s only, when given); a log that cannot be read
    is one line on stderr and left out: the others are still the truth about their
    flows."""
    logs = [plane.log(target)] if target else [*plane.logs.values(), plane.legacy]
    found = read_logs(logs, timeout=15)
    histories: dict[str, list[Envelope]] = {}
    for name, result in sorted(found.items()):
        if isinstance(result, SrmError):
            print(f"{PROG}: the log of {name} is not shown: {result}", file=sys.stderr)
        else:
            histories[name] = result
    if not histories:
        fail(PROG, "no log could be read (see above)", status=1)
    return histories


def _histories_in_db(url: str, plane: ControlPlane) -> dict[str, list[Envelope]]:
    from srm_common.adapters.sql.projection import SqlProjection

    try:
        with SqlProjection(url, migrate=False) as projection:
            rows = projection.values_by_log()
    except SrmError as exc:
        fail(PROG, str(exc), status=1)
    return {
        log or plane.legacy.name: [decode(v, offset=o) for o, v in values]
        for log, values in rows.items()
    }
