"""`srm-control offsets`, `failover` and `failback`: consumer groups across clusters.

``offsets`` prints what the checkpoint tasks wrote on the target (``<S>.checkpoints
.internal``), so it works while the source cluster is down, as CSV that
``kafka-consumer-groups --reset-offsets --from-file F --execute`` takes.

``failover --group G --from A --to B`` moves G from A to B: each offset G committed on A
is translated exactly (a topic A copies to B forward, a remote topic A holds of B's
back to B's own topic) from the flows' offset syncs, and committed for G on B. It
refuses, changing nothing, when G has active members on either side or any partition
cannot be translated exactly (unless ``--allow-inexact``: such partitions then take the
nearest sync below, which may re-read but never skips). With A unreachable it uses the
last checkpoints on B instead, and says so. ``failback`` is the same move home.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient
from srm_common.adapters.flow_offsets import FlowOffsets
from srm_common.adapters.group_admin import (
    GroupAdminError,
    activity,
    committed_offsets,
    set_offsets,
)
from srm_common.cli_support import fail
from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.domain.filters import compile_patterns
from srm_common.domain.translation import Translation
from srm_common.errors import InvalidPatternError, SrmError

from srm_control.clients import KafkaClients

PROG = "srm-control"
Key = tuple[str, int]


# -- offsets -------------------------------------------------------------------------------


def offsets(args: argparse.Namespace, config: SrmConfig, clients: KafkaClients) -> int:
    flow = _flow(config, args.source, args.target)
    if bool(args.group) == bool(args.groups):
        fail(PROG, "name the group: --group G, or several with --groups REGEX")
    wanted = _group_matcher(args)
    client = clients.checkpoints(flow)
    try:
        found = client.checkpoints(flow.source, None if args.groups else {args.group})
    except SrmError as exc:
        fail(PROG, str(exc), status=1)
    rows = sorted(
        (c.consumer_group_id, c.topic, c.partition, c.upstream_offset, c.downstream_offset)
        for c in found.values()
        if wanted(c.consumer_group_id)
    )
    if not rows:
        print(
            f"{PROG}: no checkpoints of {args.group or args.groups!r} from {flow.source} on"
            f" {flow.target} yet (is checkpointing on for {flow.name} and the group listed"
            " by its groups?)",
            file=sys.stderr,
        )
        return 1
    several = len({row[0] for row in rows}) > 1 or bool(args.groups)
    if args.export:
        # kafka-consumer-groups --from-file: topic,partition,offset for one group;
        # group,topic,partition,offset with --all-groups or several --group.
        for group, topic, partition, _up, down in rows:
            print(
                f"{group},{topic},{partition},{down}" if several else f"{topic},{partition},{down}"
            )
        return 0
    print(f"{'GROUP':30} {'TOPIC':40} {'PARTITION':>9} {'SOURCE-OFFSET':>14} {'OFFSET':>10}")
    for group, topic, partition, up, down in rows:
        print(f"{group:30} {topic:40} {partition:>9} {up:>14} {down:>10}")
    return 0


def _group_matcher(args: argparse.Namespace):  # noqa: ANN202
    if args.group:
        return lambda g: g == args.group
    try:
        pattern = compile_patterns([args.groups])  # Java's dialect, as in the lists
    except InvalidPatternError as exc:
        fail(PROG, f"--groups: {exc.message}")
    return lambda g: pattern is not None and pattern.matches(g)


# -- failover / failback -------------------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """One partition of the group: where it was on the old side, where it goes."""

    topic: str
    partition: int
    offset: int
    to_topic: str | None
    answer: Translation
    inexact: int | None = None  # with --allow-inexact: the nearest sync below


def failover(args: argparse.Namespace, config: SrmConfig, clients: KafkaClients) -> int:
    old, new = args.from_, args.to
    for alias in (old, new):
        if alias not in config.clusters:
            fail(
                PROG, f"unknown cluster alias {alias!r}; known aliases: {', '.join(config.aliases)}"
            )
    if old == new:
        fail(PROG, "--from and --to must be different clusters")
    group = args.group
    forward = config.flows.get((old, new))
    backward = config.flows.get((new, old))
    if forward is None and backward is None:
        fail(PROG, f"no flow between {old} and {new} in the configuration")
    any_flow = forward or backward
    assert any_flow is not None
    # A cluster that does not answer is reported once, by the call that needed it;
    # librdkafka's own connection errors would repeat it on stderr every second.
    new_admin = clients.admin({**_admin_of(any_flow, new), "log_level": 0})
    old_admin = clients.admin({**_admin_of(any_flow, old), "log_level": 0})
    try:
        on_new = activity(new_admin, group, where=new)
    except GroupAdminError as exc:
        fail(PROG, str(exc), status=1)
    if on_new.active:
        fail(
            PROG,
            f"group {group!r} has {on_new.members} active members on {new}: stop them first"
            " (offsets of a group with members cannot be set); nothing changed",
            status=1,
        )
    try:
        on_old = activity(old_admin, group, where=old)
        commits = committed_offsets(old_admin, group, where=old)
    except GroupAdminError as exc:
        if forward is None:
            fail(PROG, f"{exc}; without {old} nothing can be translated back", status=1)
        return _from_checkpoints(args, forward, new_admin, clients, reason=str(exc))
    if on_old.active and not args.allow_active:
        fail(
            PROG,
            f"group {group!r} still has {on_old.members} active members on {old}: its"
            " position moves on while it is translated. Stop them first (or pass"
            " --allow-active to take the offsets as they are now); nothing changed",
            status=1,
        )
    if not commits:
        fail(PROG, f"group {group!r} has no committed offsets on {old}; nothing to move", status=1)
    moves = _translate(commits, forward, backward, clients)
    return _apply(args, moves, new_admin, new)


def _admin_of(flow: FlowConfig, alias: str) -> Mapping[str, str]:
    return flow.source_admin if flow.source == alias else flow.target_admin


def _translate(
    commits: Mapping[Key, int],
    forward: FlowConfig | None,
    backward: FlowConfig | None,
    clients: KafkaClients,
) -> list[Move]:
    readers = {}
    try:
        if forward is not None:
            readers["forward"] = clients.offsets(forward)
        if backward is not None:
            readers["backward"] = clients.offsets(backward)
        for reader in readers.values():
            reader.refresh()
        moves = []
        for (topic, partition), offset in sorted(commits.items()):
            moves.append(_move(readers, topic, partition, offset))
        return moves
    except SrmError as exc:
        fail(PROG, str(exc), status=1)
    finally:
        for reader in readers.values():
            reader.close()


def _move(readers: Mapping[str, FlowOffsets], topic: str, partition: int, offset: int) -> Move:
    back = readers.get("backward")
    if back is not None and not back.shared:
        upstream = back.source_topic(topic)
        if upstream is not None:  # a remote topic of the other side's: back to its own
            history = back.histories.get((upstream, partition))
            answer = back.backward(upstream, partition, offset)
            nearest = history.conservative_backward(offset) if history else None
            return Move(topic, partition, offset, upstream, answer, nearest)
    ahead = readers.get("forward")
    if ahead is not None and (topic, partition) in ahead.histories:
        answer = ahead.forward(topic, partition, offset)
        nearest = ahead.histories[(topic, partition)].conservative_forward(offset)
        return Move(topic, partition, offset, ahead.remote_topic(topic), answer, nearest)
    return Move(topic, partition, offset, None, Translation(None, "not replicated between them"))


def _apply(args: argparse.Namespace, moves: list[Move], admin: AdminClient, new: str) -> int:
    group = args.group
    chosen: dict[Key, int] = {}
    refused = []
    for move in moves:
        if move.to_topic is None:
            continue
        if move.answer.offset is not None:
            chosen[(move.to_topic, move.partition)] = move.answer.offset
        elif args.allow_inexact and move.inexact is not None:
            chosen[(move.to_topic, move.partition)] = move.inexact
        else:
            refused.append(move)
    _print_moves(moves, chosen)
    if refused:
        print(
            f"{PROG}: {len(refused)} partitions of {group!r} cannot be translated exactly"
            " (above); nothing changed. Wait for the copy and the offset syncs, or pass"
            " --allow-inexact to take the nearest sync below (records may be read again)",
            file=sys.stderr,
        )
        return 1
    if not chosen:
        print(f"{PROG}: none of {group!r}'s topics is replicated to {new}; nothing changed")
        return 1
    if args.dry_run:
        print(f"dry run: nothing changed; {len(chosen)} partitions would be set on {new}")
        return 0
    try:
        set_offsets(admin, group, chosen, where=new)
    except GroupAdminError as exc:
        fail(PROG, str(exc), status=1)
    print(f"set {len(chosen)} partitions of group {group!r} on {new}")
    return 0


def _print_moves(moves: list[Move], chosen: Mapping[Key, int]) -> None:
    print(f"{'TOPIC':36} {'PART':>4} {'OFFSET':>10}   {'TO TOPIC':36} {'OFFSET':>10}  NOTE")
    for m in moves:
        target = chosen.get((m.to_topic, m.partition)) if m.to_topic else None
        note = "" if m.answer.exact else m.answer.reason
        if target is not None and not m.answer.exact:
            note = f"inexact (nearest sync below): {note}"
        shown = "-" if target is None else str(target)
        to_topic = m.to_topic or "-"
        print(f"{m.topic:36} {m.partition:>4} {m.offset:>10}   {to_topic:36} {shown:>10}  {note}")


def _from_checkpoints(
    args: argparse.Namespace,
    flow: FlowConfig,
    admin: AdminClient,
    clients: KafkaClients,
    *,
    reason: str,
) -> int:
    print(
        f"{PROG}: {flow.source} does not answer ({reason}); using the last checkpoints on"
        f" {flow.target}: the group's newest commits on {flow.source} may be missing",
        file=sys.stderr,
    )
    client = clients.checkpoints(flow)
    try:
        found = client.checkpoints(flow.source, {args.group})
    except SrmError as exc:
        fail(PROG, str(exc), status=1)
    moves = [
        Move(
            flow.replication_policy().upstream_topic(c.topic) or c.topic,
            c.partition,
            c.upstream_offset,
            c.topic,
            Translation(c.downstream_offset),
        )
        for c in sorted(found.values(), key=lambda c: (c.topic, c.partition))
    ]
    return _apply(args, moves, admin, flow.target)


def _flow(config: SrmConfig, source: str, target: str) -> FlowConfig:
    try:
        return config.flow(source, target)
    except SrmError as exc:
        fail(PROG, str(exc))
