"""`make up`: the local stack from one configuration file, until Ctrl-C or `make down`.

Steps: load the configuration (one clear message if it is wrong), fetch jars, start a
local KRaft cluster for every cluster whose bootstrap servers are one loopback address,
list their topics, print the replication plan, end with a summary of what runs where,
start the driver (replication), then watch: the plan is printed again when topics appear
or disappear, a driver that dies is restarted (its resume makes that safe), and
everything stops on Ctrl-C, SIGTERM or `make down` (which signals this process via its
pid file): the driver first, so its running batches are recorded, then the clusters.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType

from srm_common.config import SrmConfig, load_config
from srm_common.errors import ConfigError
from srm_common.replication_plan import describe_allowed, plan_replication, render_plan

from srm_local.clusters import (
    ClusterSpec,
    ClusterSpecError,
    LocalKafkaCluster,
    parse_cluster_spec,
    start_clusters,
)
from srm_local.http_tokens import TOKENS_FILE, HttpTokens, write_tokens
from srm_local.jars import fetch_all
from srm_local.live_lists import LiveLists
from srm_local.paths import project_root, run_dir
from srm_local.services import (
    ServiceProcess,
    aggregator_service,
    coordinator_service,
    driver_service,
    gateway_service,
)

DEFAULT_CLUSTERS = (("primary", 9092), ("backup", 9192))
WATCH_SECONDS = 2.0
_LOOPBACK = ("127.0.0.1", "localhost")


class _Stop(Exception):
    """Raised from the signal handlers to leave the watch loop cleanly."""


def stack_pid_file() -> Path:
    return run_dir() / "stack.pid"


def default_cluster_specs() -> list[ClusterSpec]:
    """primary and backup on their default ports, moved by SRM_<ALIAS>_PORT."""
    specs = []
    for alias, port in DEFAULT_CLUSTERS:
        variable = f"SRM_{alias.upper()}_PORT"
        value = os.environ.get(variable, str(port))
        try:
            specs.append(parse_cluster_spec(f"{alias}={value}"))
        except ClusterSpecError:
            raise ClusterSpecError(
                f"{variable}={value!r} is not a port; use a number from 1024 to 65534"
            ) from None
    return specs


def local_cluster(spec: ClusterSpec) -> LocalKafkaCluster:
    """The cluster `make up` / `make kafka-up` runs for ``spec``, under the run folder."""
    return LocalKafkaCluster(spec, run_dir() / "kafka" / spec.alias)


def start_local_clusters(specs: Sequence[ClusterSpec], *, fresh: bool) -> list[LocalKafkaCluster]:
    """Start the clusters, printing progress and how long each took."""
    clusters = [local_cluster(spec) for spec in specs]
    names = ", ".join(f"{c.alias} ({c.bootstrap_servers})" for c in clusters)
    print(f"starting Kafka clusters: {names}...", flush=True)
    timings = start_clusters(clusters, fresh=fresh)
    for cluster in clusters:
        print(
            f"  {cluster.alias:<10} ready on {cluster.bootstrap_servers} "
            f"in {timings[cluster.alias]:.1f} s",
            flush=True,
        )
    return clusters


def forget_event_log() -> None:
    """With the clusters' data wiped, what remembered their event log goes too: the
    coordinators' log memories and the gateway's read model (else they would report the
    new log as the old one lost, which is right only when the wipe was not meant)."""
    folder = run_dir() / "services"
    for path in [*folder.glob("coordinator-*-log.json"), folder / "srm-gateway.db"]:
        path.unlink(missing_ok=True)


def run_stack(*, config_path: str | None, fresh: bool, detach: bool) -> int:
    path = Path(config_path) if config_path else project_root() / "deploy" / "local" / "srm.yaml"
    overrides = port_overrides(default_cluster_specs())
    try:
        config = load_config(path, overrides=overrides)
    except ConfigError as exc:
        print(f"srm-local: configuration error\n{exc}", file=sys.stderr)
        return 2
    specs, remote = split_local_clusters(config)
    if not specs:
        print(
            f"srm-local: {path} names no cluster on 127.0.0.1:<port>; nothing to start",
            file=sys.stderr,
        )
        return 2
    fetch_all()
    if fresh:
        forget_event_log()
    clusters = start_local_clusters(specs, fresh=fresh)
    services: list[ServiceProcess] = []
    try:
        list_topics = TopicLister(config)
        topics = list_topics()
        plans = plan_replication(config, topics)
        print(f"\nreplication plan ({path}):")
        print(render_plan(plans))
        services = [] if detach else stack_services(path, overrides)
        for service in services:
            service.start()
        print(summary(config, path, clusters, remote, services))
        if detach:
            return 0
        stack_pid_file().write_text(f"{os.getpid()}\n")
        return watch(config, clusters, list_topics, topics, services)
    except BaseException:
        if not detach:
            stop_services(services)
            stop_clusters(clusters)
        raise
    finally:
        if not detach:
            stack_pid_file().unlink(missing_ok=True)


def stack_services(path: Path, overrides: dict[str, str]) -> list[ServiceProcess]:
    """Two coordinators (a leader and a standby), SRM_DRIVERS drivers (default 1), a
    metrics aggregator per cluster some flow writes into, and the API gateway.

    Their HTTP APIs take changes only from principals of a tokens file made afresh here
    (:func:`stack_tokens`): srm-control, each driver, the gateway."""
    base = int(os.environ.get("SRM_SERVICE_PORT", "8090"))
    count = int(os.environ.get("SRM_DRIVERS", "1"))
    drivers = [f"driver-{i + 1}" for i in range(count)]
    tokens = stack_tokens(drivers)
    overrides = {**overrides, "srm.http.tokens.file": str(tokens.tokens_file)}
    services = [
        coordinator_service(f"coordinator-{i + 1}", base + i, path, overrides) for i in range(2)
    ]
    services += [
        driver_service(
            path,
            overrides,
            name=name,
            port=base + 10 + i,
            token_file=tokens.token_file(f"driver:{name}"),
        )
        for i, name in enumerate(drivers)
    ]
    targets = sorted({flow.target for flow in load_config(path).flows.values()})
    services += [aggregator_service(path, overrides, cluster) for cluster in targets]
    return [*services, gateway_service(path, overrides, tokens.token_file("api-gateway"))]


def stack_tokens(drivers: Sequence[str]) -> HttpTokens:
    """Fresh tokens in ``.run/http`` (0700; files 0600): the tokens file the services
    read (hashes only) and one token per principal; srm-control finds its own there."""
    principals = ["srm-control", "api-gateway", *(f"driver:{name}" for name in drivers)]
    return write_tokens(run_dir() / "http", principals)


def stop_services(services: Sequence[ServiceProcess]) -> None:
    """Drivers first (they finish their batches), then the coordinators."""
    for service in sorted(services, key=lambda s: not s.name.startswith("driver")):
        if service.name.startswith("driver"):
            print(f"stopping {service.name} (it finishes its running batches)...", flush=True)
        service.stop()


def port_overrides(specs: Sequence[ClusterSpec]) -> dict[str, str]:
    """``<alias>.bootstrap.servers`` for each SRM_<ALIAS>_PORT set in the environment."""
    return {
        f"{spec.alias}.bootstrap.servers": spec.bootstrap_servers
        for spec in specs
        if os.environ.get(f"SRM_{spec.alias.upper()}_PORT")
    }


def split_local_clusters(config: SrmConfig) -> tuple[list[ClusterSpec], list[str]]:
    """Clusters to run here (one loopback host:port) and aliases that live elsewhere."""
    local, remote = [], []
    for alias, cluster in config.clusters.items():
        servers = cluster.bootstrap_servers
        host, _, port = servers[0].rpartition(":") if len(servers) == 1 else ("", "", "")
        if host in _LOOPBACK and port.isdigit():
            local.append(ClusterSpec(alias, int(port)))
        else:
            remote.append(alias)
    return local, remote


class TopicLister:
    """Lists topic names per alias, with one admin client per cluster for the whole watch."""

    def __init__(self, config: SrmConfig) -> None:
        from srm_common.adapters import kafka_clients

        self._clients = {
            alias: kafka_clients.admin(
                {**cluster.client_config("admin"), "socket.timeout.ms": 5000}
            )
            for alias, cluster in config.clusters.items()
        }

    def __call__(self) -> dict[str, set[str]]:
        """Topic names per alias; an unreachable cluster is left out (plan says unknown)."""
        topics: dict[str, set[str]] = {}
        for alias, client in self._clients.items():
            try:
                topics[alias] = set(client.list_topics(timeout=5).topics)
            except Exception:  # noqa: BLE001 - KafkaException: shown as "unknown" in the plan
                continue
        return topics


def summary(
    config: SrmConfig,
    path: Path,
    clusters: Sequence[LocalKafkaCluster],
    remote: Sequence[str],
    services: Sequence[ServiceProcess],
) -> str:
    lines = ["", "what runs where:"]
    for cluster in clusters:
        lines.append(
            f"  kafka {cluster.alias:<10} {cluster.bootstrap_servers:<17} pid {cluster.pid()}"
            f"  data {cluster.folder / 'data'}  log {cluster.server_log}"
        )
    for alias in remote:
        servers = ",".join(config.clusters[alias].bootstrap_servers)
        lines.append(f"  kafka {alias:<10} {servers}  (external, not started here)")
    lines += [
        f"  config           {path}",
        *flow_lines(config),
        "  kafka tools      .venv/bin/kafka-topics, kafka-consumer-groups, kafka-console-*,"
        " kafka-*-perf-test",
        *service_lines(services),
        "  srm-control      .venv/bin/srm-control topics --source primary --target backup"
        " --list   (--add/--remove PATTERN; audit)",
        *token_lines(services),
        "",
        "Produce to a topic on one cluster and it appears on the other within seconds, e.g.",
        "  .venv/bin/kafka-console-producer --bootstrap-server 127.0.0.1:9092 --topic orders",
        "  .venv/bin/kafka-console-consumer --bootstrap-server 127.0.0.1:9192"
        " --topic primary.orders --from-beginning",
        "",
        "Ctrl-C here, or `make down` anywhere, stops everything.",
    ]
    return "\n".join(lines)


def flow_lines(config: SrmConfig) -> list[str]:
    """Each enabled flow with the topics the file allows and how to change them (the watch
    prints the plan again with the event log's lists when srm-control changes them)."""
    flows = config.enabled_flows()
    if not flows:
        return ["  enabled flows    none"]
    return [
        f"  flow {flow.name:<11} topics allowed: "
        + describe_allowed(flow.source, flow.target, flow.topics)
        for flow in flows
    ]


def token_lines(services: Sequence[ServiceProcess]) -> list[str]:
    """Where the HTTP tokens are (never a token)."""
    folder = run_dir() / "http"
    if not services or not (folder / TOKENS_FILE).is_file():
        return []
    return [
        f"  http tokens      {folder / TOKENS_FILE} (hashes; changes over HTTP need a token)",
        f"                   srm-control bears {folder / 'srm-control.token'} (found by"
        ' default); curl -H "Authorization: Bearer $(cat FILE)"',
    ]


def service_lines(services: Sequence[ServiceProcess]) -> list[str]:
    if not services:
        return ["  services         not started (--detach starts only the clusters)"]
    roles = {
        "coordinator": "srm-coordinator: event log, leader election, assignment",
        "driver": "srm-driver: runs the tasks it is assigned",
        "gateway": "srm-api-gateway: dashboard at /, replications, metrics; OpenAPI at /docs",
        "aggregator": "srm-metrics-aggregator: raw metrics -> 1 min / 1 h windows",
    }
    lines = []
    for service in services:
        role = roles[next((r for r in roles if service.name.startswith(r)), "coordinator")]
        if "--port" in service.command:
            where = f"http://127.0.0.1:{service.command[service.command.index('--port') + 1]}"
        else:
            where = "(no HTTP)".ljust(21)
        lines.append(
            f"  {service.name:<18} {where}  pid {service.pid}  log {service.log_path}  ({role})"
        )
    gateway = next((s for s in services if s.name == "gateway"), None)
    if gateway is not None:
        port = gateway.command[gateway.command.index("--port") + 1]
        lines.append(f"  {'dashboard':<18} http://127.0.0.1:{port}/")
    return lines


def watch(
    config: SrmConfig,
    clusters: Sequence[LocalKafkaCluster],
    list_topics: TopicLister,
    topics: Mapping[str, set[str]],
    services: Sequence[ServiceProcess] = (),
) -> int:
    """Stay in the foreground; reprint the plan when topics change; restart a driver
    that died; stop on a signal (the driver first, then the clusters)."""

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        raise _Stop

    # Installed explicitly: a process started in the background of a script inherits
    # SIGINT as ignored, and a closed terminal (SIGHUP) must not orphan the brokers.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_term)
    known = dict(topics)
    lists = LiveLists(config)
    try:
        while True:
            time.sleep(WATCH_SECONDS)
            gone = [c.alias for c in clusters if not c.is_running()]
            if gone:
                print(f"cluster(s) {', '.join(gone)} stopped; stopping the stack")
                stop_services(services)
                stop_clusters(clusters)
                return 0 if len(gone) == len(clusters) else 1
            for service in services:
                if service.exit_code() is not None:
                    print(
                        f"\n{service.name} exited with code {service.exit_code()}; last lines"
                        f" of {service.log_path}:\n{service.tail()}\nrestarting it"
                    )
                    service.restarts += 1
                    service.start()
            current = list_topics()
            edited = lists.poll()
            if current != known or edited:
                what = "topics changed" if current != known else "the event log's lists changed"
                known = current
                print(f"\n[{time.strftime('%H:%M:%S')}] {what}; replication plan:")
                print(render_plan(plan_replication(lists.config(), current)))
    except (KeyboardInterrupt, _Stop):
        print("\nstopping...")
        stop_services(services)
        stop_clusters(clusters)
        return 0
    finally:
        lists.close()


def stop_clusters(clusters: Sequence[LocalKafkaCluster]) -> None:
    for cluster in clusters:
        if cluster.stop():
            print(f"stopped {cluster.alias} ({cluster.bootstrap_servers})")


def stop_running_stack() -> bool:
    """Ask a foreground `srm-local up` to stop (SIGTERM) and wait for it; True if one ran."""
    try:
        pid = int(stack_pid_file().read_text().strip())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return True
