"""`srm-local`: the local development stack (what `make up`, `make down` and friends run)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from srm_local.clusters import (
    ClusterSpec,
    ClusterSpecError,
    ClusterStartError,
    find_clusters,
    parse_cluster_spec,
)
from srm_local.jars import JarFetchError, fetch_all
from srm_local.paths import run_dir
from srm_local.stack import default_cluster_specs, run_stack, start_local_clusters
from srm_local.stopping import down

EPILOG = """\
examples:
  srm-local up                         fetch jars, start primary and backup, show the plan
  srm-local up --config my-srm.yaml    the same with another configuration
  srm-local down                       stop everything `up` started (in parallel, 68 s at
                                       most while the launcher answers), then check that no
                                       process or port of the stack is left; exit 1 naming
                                       any that is
  srm-local kafka up                   only the Kafka clusters (primary:9092, backup:9192)
  srm-local kafka up --cluster dr=9292 a single extra cluster 'dr' on port 9292
  srm-local kafka up --secured --fresh the clusters with SASL_SSL (SCRAM), mutual TLS and
                                       an authorizer (docs/security.md)
  srm-local kafka status               which local clusters run, where
  srm-local kafka stop dr              stop one cluster (the stack of `up` keeps running:
                                       only dr's flows wait; kill -STOP $(cat
                                       .run/kafka/dr/kafka.pid) freezes it instead)
  srm-local kafka start dr             start it again, with its data, while the stack runs
  srm-local jars                       fetch the Kafka and Spark-connector jars now

ports: SRM_PRIMARY_PORT / SRM_BACKUP_PORT move the default clusters; each cluster uses
its port for clients and the next port for its KRaft controller.
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except (ClusterStartError, ClusterSpecError, JarFetchError) as exc:
        print(f"srm-local: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="srm-local",
        description="Run SRM locally: real Apache Kafka clusters (KRaft) as processes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    up = commands.add_parser("up", help="start the local stack and show what it replicates")
    up.add_argument(
        "--config", default=None, help="SRM configuration (default deploy/local/srm.yaml)"
    )
    up.add_argument("--fresh", action="store_true", help="wipe cluster data before starting")
    up.add_argument(
        "--detach", action="store_true", help="return after start-up (stop with `srm-local down`)"
    )
    up.set_defaults(handler=_cmd_up)

    down = commands.add_parser("down", help="stop everything the local stack started")
    down.set_defaults(handler=_cmd_down)

    jars = commands.add_parser("jars", help="fetch the Kafka and Spark-connector jars")
    jars.set_defaults(handler=lambda _args: (fetch_all(), 0)[1])

    kafka = commands.add_parser("kafka", help="manage only the local Kafka clusters")
    kafka_commands = kafka.add_subparsers(title="kafka commands", required=True, metavar="ACTION")
    kafka_up = kafka_commands.add_parser("up", help="start clusters and wait until they answer")
    kafka_up.add_argument(
        "--cluster",
        action="append",
        metavar="ALIAS=PORT",
        type=_cluster_arg,
        help="a cluster to start (repeatable; default primary=9092 and backup=9192)",
    )
    kafka_up.add_argument("--fresh", action="store_true", help="wipe cluster data first")
    kafka_up.add_argument(
        "--secured",
        action="store_true",
        help="SASL_SSL on each port (SCRAM-SHA-512/256, PLAIN), the controller on the next,"
        " SSL with client certificates and SASL_PLAINTEXT on the two after; StandardAuthorizer",
    )
    kafka_up.set_defaults(handler=_cmd_kafka_up)
    kafka_down = kafka_commands.add_parser("down", help="stop every local cluster")
    kafka_down.set_defaults(handler=_cmd_down)
    kafka_status = kafka_commands.add_parser("status", help="show local clusters")
    kafka_status.set_defaults(handler=_cmd_kafka_status)
    kafka_start = kafka_commands.add_parser(
        "start", help="start one stopped cluster again (its data kept), e.g. while `up` runs"
    )
    kafka_start.add_argument("alias", help="the cluster's alias (srm-local kafka status)")
    kafka_start.set_defaults(handler=_cmd_kafka_start)
    kafka_stop = kafka_commands.add_parser(
        "stop", help="stop one cluster (controlled shutdown); the stack keeps running"
    )
    kafka_stop.add_argument("alias", help="the cluster's alias (srm-local kafka status)")
    kafka_stop.set_defaults(handler=_cmd_kafka_stop)
    return parser


def _cluster_arg(text: str) -> ClusterSpec:
    try:
        return parse_cluster_spec(text)
    except ClusterSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _cmd_kafka_up(args: argparse.Namespace) -> int:
    specs = args.cluster or default_cluster_specs()
    if args.secured:
        return _secured_kafka_up(specs, fresh=args.fresh)
    start_local_clusters(specs, fresh=args.fresh)
    print("stop them with `make kafka-down` (srm-local kafka down)")
    return 0


def _secured_kafka_up(specs: Sequence[ClusterSpec], *, fresh: bool) -> int:
    from srm_local.clusters import start_clusters
    from srm_local.secured import local_secured_clusters, write_local_client_files

    root = run_dir()
    clusters = local_secured_clusters(specs, root, fresh=fresh)
    print("starting secured Kafka clusters...", flush=True)
    timings = start_clusters(clusters, fresh=fresh)
    for cluster in clusters:
        security = cluster.spec.security
        assert security is not None
        host = cluster.spec.host
        print(
            f"  {cluster.alias:<10} SASL_SSL {cluster.bootstrap_servers}, mutual TLS"
            f" {host}:{security.ssl_port}, SASL_PLAINTEXT {host}:{security.sasl_plaintext_port}"
            f" (ready in {timings[cluster.alias]:.1f} s)"
        )
    files = write_local_client_files(clusters, root)
    tls = clusters[0].spec.security.tls  # type: ignore[union-attr]
    print(f"  admin          User:admin, password in {root / 'secured' / 'admin.password'}")
    print(f"  certificates   {tls.folder} (CA ca.pem, truststore.jks; store password inside")
    print("                 the client files)")
    print(f"  client files   {', '.join(str(f) for f in files)}")
    print(
        "  e.g.           .venv/bin/kafka-topics --bootstrap-server"
        f" {clusters[0].bootstrap_servers} --command-config {files[0]} --list"
    )
    print("stop them with `make kafka-down` (srm-local kafka down)")
    return 0


def _cmd_kafka_status(_args: argparse.Namespace) -> int:
    clusters = find_clusters(run_dir())
    if not clusters:
        print(f"no local clusters under {run_dir() / 'kafka'}")
    for cluster in clusters:
        pid = cluster.pid()
        state = f"running (pid {pid})" if pid else "stopped"
        print(f"{cluster.alias:<10} {cluster.bootstrap_servers:<18} {state:<22} {cluster.folder}")
    return 0


def _one_cluster(alias: str):  # type: ignore[no-untyped-def]
    """The local cluster ``alias`` under the run folder; exit 2 naming the known ones."""
    clusters = {c.alias: c for c in find_clusters(run_dir())}
    if alias not in clusters:
        known = ", ".join(clusters) or "none (start the stack first: make up)"
        print(f"srm-local: no local cluster {alias!r}; known: {known}", file=sys.stderr)
        raise SystemExit(2)
    return clusters[alias]


def _cmd_kafka_start(args: argparse.Namespace) -> int:
    cluster = _one_cluster(args.alias)
    if cluster.is_running():
        print(f"{cluster.alias} runs already ({cluster.bootstrap_servers})")
        return 0
    print(f"starting {cluster.alias} on {cluster.bootstrap_servers} with its data...", flush=True)
    took = cluster.start()
    print(f"{cluster.alias} answers again after {took:.1f} s; its flows catch up")
    return 0


def _cmd_kafka_stop(args: argparse.Namespace) -> int:
    cluster = _one_cluster(args.alias)
    if cluster.stop():
        print(
            f"stopped {cluster.alias} ({cluster.bootstrap_servers}); start it again with"
            f" `srm-local kafka start {cluster.alias}`"
        )
    else:
        print(f"{cluster.alias} was not running")
    return 0


def _cmd_down(_args: argparse.Namespace) -> int:
    return down()


def _cmd_up(args: argparse.Namespace) -> int:
    return run_stack(config_path=args.config, fresh=args.fresh, detach=args.detach)


if __name__ == "__main__":
    raise SystemExit(main())
