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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType

from srm_common.config import SrmConfig, load_config
from srm_common.errors import ConfigError
from srm_common.replication_plan import describe_allowed, plan_replication, render_plan

from srm_local.cluster_watch import ClusterWatch
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
    stop_in_parallel,
)
from srm_local.stopping import CLUSTER_STOP_SECONDS, port_holder, stack_pid_file

DEFAULT_CLUSTERS = (("primary", 9092), ("backup", 9192))
WATCH_SECONDS = 2.0
_LOOPBACK = ("127.0.0.1", "localhost")


class _Stop(Exception):
    """Raised from the signal handlers to leave the watch loop cleanly."""


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
    services = [] if detach else stack_services(path, overrides)
    taken = taken_ports(specs, services)
    if taken:
        print("srm-local: cannot start, ports taken:\n" + "\n".join(taken), file=sys.stderr)
        return 2
    fetch_all()
    if fresh:
        forget_event_log()
    if not detach:  # `make down` finds this launcher from now on
        stack_pid_file().parent.mkdir(parents=True, exist_ok=True)
        stack_pid_file().write_text(f"{os.getpid()}\n")
    try:
        clusters = start_local_clusters(specs, fresh=fresh)
    except BaseException:
        if not detach:
            stack_pid_file().unlink(missing_ok=True)
        raise
    try:
        list_topics = TopicLister(config)
        topics = list_topics()
        plans = plan_replication(config, topics)
        print(f"\nreplication plan ({path}):")
        print(render_plan(plans))
        for service in services:
            service.start()
        print(summary(config, path, clusters, remote, services))
        if detach:
            return 0
        return watch(config, clusters, list_topics, topics, services)
    except BaseException:
        if not detach:
            stop_services(services)
            stop_clusters(clusters)
        raise
    finally:
        if not detach:
            stack_pid_file().unlink(missing_ok=True)


def stack_drivers(targets: Sequence[str]) -> list[tuple[str, str | None]]:
    """The drivers to run, (name, target or None for every target): SRM_DRIVERS_PER_TARGET
    drivers pinned to each target cluster (``driver-<target>-<n>``: one driver set per
    site, as SRM's Driver Target Cluster deploys them), else SRM_DRIVERS drivers serving
    every target (default 1)."""
    per_target = _count("SRM_DRIVERS_PER_TARGET", 0)
    if per_target:
        return [(f"driver-{t}-{i + 1}", t) for t in targets for i in range(per_target)]
    return [(f"driver-{i + 1}", None) for i in range(_count("SRM_DRIVERS", 1))]


def _count(variable: str, default: int) -> int:
    value = os.environ.get(variable, "").strip() or str(default)
    if not value.isdigit():
        raise ClusterSpecError(f"{variable}={value!r} is not a number of drivers; e.g. 2")
    return int(value)


def stack_services(path: Path, overrides: dict[str, str]) -> list[ServiceProcess]:
    """Two coordinators (a leader and a standby of every target's log), the drivers of
    :func:`stack_drivers`, a metrics aggregator per cluster some flow writes into, and
    the API gateway.

    Their HTTP APIs take changes only from principals of a tokens file made afresh here
    (:func:`stack_tokens`): srm-control, each driver, the gateway."""
    base = int(os.environ.get("SRM_SERVICE_PORT", "8090"))
    targets = sorted({flow.target for flow in load_config(path).flows.values()})
    drivers = stack_drivers(targets)
    tokens = stack_tokens([name for name, _target in drivers])
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
            target=target,
        )
        for i, (name, target) in enumerate(drivers)
    ]
    services += [aggregator_service(path, overrides, cluster) for cluster in targets]
    return [*services, gateway_service(path, overrides, tokens.token_file("api-gateway"))]


def stack_tokens(drivers: Sequence[str]) -> HttpTokens:
    """Fresh tokens in ``.run/http`` (0700; files 0600): the tokens file the services
    read (hashes only) and one token per principal; srm-control finds its own there."""
    principals = ["srm-control", "api-gateway", *(f"driver:{name}" for name in drivers)]
    return write_tokens(run_dir() / "http", principals)


def taken_ports(specs: Sequence[ClusterSpec], services: Sequence[ServiceProcess]) -> list[str]:
    """One line per port the stack needs that a process already listens on, naming it
    (a cluster of this run folder that still runs is adopted, not reported)."""
    wanted = [(s.port, s.name, "SRM_SERVICE_PORT") for s in services if s.port]
    wanted = [
        (port, name, "SRM_GATEWAY_PORT" if name == "gateway" else variable)
        for port, name, variable in wanted
    ]
    for spec in specs:
        if local_cluster(spec).is_running():
            continue
        variable = f"SRM_{spec.alias.upper()}_PORT"
        wanted += [(spec.port, f"kafka {spec.alias}", variable)]
        wanted += [(spec.quorum_port, f"kafka {spec.alias} (controller)", variable)]
    lines = []
    for port, name, variable in wanted:
        holder = port_holder(port)
        if holder is not None:
            lines.append(
                f"  port {port} ({name}) is held by {holder}: stop it (`make down` if it is an"
                f" earlier stack) or move the port with {variable}"
            )
    return lines


def stop_services(services: Sequence[ServiceProcess]) -> None:
    """Drivers first, in parallel (they finish their running batches), then every other
    service in parallel; each within its bound (:mod:`srm_local.services`)."""
    started = time.monotonic()
    drivers = [s for s in services if s.name.startswith("driver")]
    if drivers:
        print(
            f"stopping {', '.join(s.name for s in drivers)} (running batches finish;"
            f" {drivers[0].stop_seconds} s at most)...",
            flush=True,
        )
    stop_in_parallel(drivers)
    stop_in_parallel(s for s in services if s not in drivers)
    if services:
        print(f"stopped {len(services)} services in {time.monotonic() - started:.1f} s")


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
    primary, backup = (
        ",".join(config.clusters[alias].bootstrap_servers) if alias in config.clusters else port
        for alias, port in (("primary", "127.0.0.1:9092"), ("backup", "127.0.0.1:9192"))
    )
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
        "Produce to a topic a flow allows and it appears on its target within seconds, e.g.",
        f"  .venv/bin/kafka-console-producer --bootstrap-server {primary} --topic orders",
        f"  .venv/bin/kafka-console-consumer --bootstrap-server {backup}"
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
        "coordinator": "srm-coordinator: every target's log, leader elections, assignment",
        "driver": "srm-driver: runs the tasks it is assigned",
        "gateway": "srm-api-gateway: dashboard at /, replications, metrics; OpenAPI at /docs",
        "aggregator": "srm-metrics-aggregator: raw metrics -> 1 min / 1 h windows",
    }
    lines = []
    for service in services:
        role = roles[next((r for r in roles if service.name.startswith(r)), "coordinator")]
        if "--target" in service.command:
            target = service.command[service.command.index("--target") + 1]
            role = f"srm-driver: runs the tasks of the flows into {target}, pinned there"
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
    health = ClusterWatch(tuple(c.alias for c in clusters))
    try:
        while True:
            time.sleep(WATCH_SECONDS)
            current = list_topics()
            running = [c.alias for c in clusters if c.is_running()]
            for line in health.observe(running, current):
                print(f"\n[{time.strftime('%H:%M:%S')}] {line}", flush=True)
            if health.all_stopped():
                print("every cluster stopped; stopping the stack")
                stop_services(services)
                stop_clusters(clusters)
                return 0
            for service in services:
                if service.exit_code() is not None:
                    print(
                        f"\n{service.name} exited with code {service.exit_code()}; last lines"
                        f" of {service.log_path}:\n{service.tail()}\nrestarting it"
                    )
                    service.restarts += 1
                    service.start()
            edited = lists.poll()
            # A cluster that does not answer is not "its topics vanished": keep the last.
            current = {**{a: t for a, t in known.items() if a not in current}, **current}
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
    """In parallel: SIGTERM (controlled shutdown), SIGKILL past CLUSTER_STOP_SECONDS."""
    if not clusters:
        return
    with ThreadPoolExecutor(max_workers=len(clusters)) as pool:
        stopped = list(pool.map(lambda c: c.stop(timeout=CLUSTER_STOP_SECONDS), clusters))
    for cluster, done in zip(clusters, stopped, strict=True):
        if done:
            print(f"stopped {cluster.alias} ({cluster.bootstrap_servers})")
