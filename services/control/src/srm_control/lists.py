"""``srm-control topics`` and ``groups``: a flow's allow list ("whitelist") and deny list
("blacklist"), changed through the leader of the flow's target log, or listed from it."""

from __future__ import annotations

import argparse
import getpass
import socket
import sys
import uuid

from srm_common import telemetry
from srm_common.cli_support import fail
from srm_common.config.control import ControlPlane, ControlSettings
from srm_common.config.model import SrmConfig
from srm_common.control.state import ControlState

from srm_control import PROG
from srm_control.arguments import split
from srm_control.sending import Sender, print_outcome
from srm_control.target_log import flow_of, log_of, read_state


def run(args: argparse.Namespace, config: SrmConfig, plane: ControlPlane, sender: Sender) -> int:
    """``topics`` or ``groups``: each change sent to the leader, then ``--list``."""
    flow = flow_of(args, config)
    settings = log_of(plane, flow)
    actions = [
        (action, split(getattr(args, action.replace("-", "_"))))
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
    state = read_state(settings) if actions or args.list else ControlState()
    for action, patterns in actions:
        with telemetry.span(f"{PROG} {args.command} --{action}", attributes={"srm.flow": flow}):
            _change(args, sender, settings, state, flow, action, patterns)
    if args.list:
        if actions:
            state = read_state(settings)
        print_lists(state, flow, args.command)
    return 0


def _change(
    args: argparse.Namespace,
    sender: Sender,
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
    print_outcome(
        sender.send(state, settings, "/v1/commands/patterns", body, args.timeout), flow, patterns
    )


def print_lists(state: ControlState, flow: str, kind: str) -> None:
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
