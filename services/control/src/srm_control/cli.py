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
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from srm_common import telemetry
from srm_common.adapters import kafka_clients
from srm_common.adapters.cluster_probe import refused_clusters
from srm_common.adapters.event_log_reader import EventLogReader
from srm_common.adapters.event_log_writer import EventLogWriter
from srm_common.adapters.flow_offsets import FlowOffsets
from srm_common.adapters.mirror_client import MirrorClient
from srm_common.cli_support import exit_code, fail, load_or_exit, parse_pairs
from srm_common.config.control import ControlPlane, control_plane
from srm_common.errors import SrmError

from srm_control import (
    PROG,
    acl_commands,
    arguments,
    audit_command,
    group_commands,
    lists,
    partitions,
    restore,
)
from srm_control.clients import KafkaClients
from srm_control.sending import Sender


def main(argv: Sequence[str] | None = None) -> int:
    telemetry.setup(PROG)
    try:
        return exit_code(_run, argv)
    finally:
        telemetry.current().flush()  # at most 2 s, only when OTLP is configured


def _run(argv: Sequence[str] | None) -> int:
    # SRM's scripts put the client options before the subcommand and its docs after it:
    # they are taken out wherever they are, then the rest is parsed.
    options, rest = arguments.client_options().parse_known_args(argv)
    args = arguments.parser().parse_args(rest, namespace=options)
    config = load_or_exit(PROG, _config_path(args.config), [])
    sender = Sender(
        gateway=args.gateway or os.environ.get("SRM_GATEWAY_URL", ""),
        token_file=args.token_file,
        ca_file=args.ca_file,
        cert_file=args.cert_file,
        extra=dict(config.extra),
    )
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
        return restore.run(args, config, plane, kafka())
    if args.command == "acls":
        return acl_commands.run(args, config)
    if args.command == "partitions":
        return partitions.run(args, config, plane, sender)
    if args.command == "offsets":
        return group_commands.offsets(args, config, kafka())
    if args.command in ("failover", "failback"):
        return group_commands.failover(args, config, kafka())
    return lists.run(args, config, plane, sender)


def kafka() -> KafkaClients:
    """The Kafka clients the commands that talk to a cluster directly open (srm-control's
    composition root: the commands build none)."""
    return KafkaClients(
        admin=lambda keys: kafka_clients.admin(dict(keys)),
        log_reader=lambda log, client_id: EventLogReader(log, client_id=client_id, one_shot=True),
        log_writer=lambda log, client_id: EventLogWriter(log, client_id=client_id),
        offsets=FlowOffsets,
        checkpoints=lambda flow: MirrorClient(
            flow.target_consumer, flow.replication_policy(), cluster=flow.target
        ),
    )


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
        props = parse_pairs(arguments.split(args.props), "--props", "security.protocol=SSL")
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
