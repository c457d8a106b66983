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
from srm_common.replication_plan import plan_replication, render_plan

from srm_local.cluster_watch import ClusterWatch
from srm_local.clusters import (
    ClusterSpec,
    ClusterSpecError,
    LocalKafkaCluster,
    parse_cluster_spec,
    start_clusters,
)
from srm_local.jars import fetch_all
from srm_local.live_lists import LiveLists
from srm_local.paths import project_root, run_dir
from srm_local.services import (
    ServiceProcess,
)
from srm_local.stack_services import stack_services, stop_services
from srm_local.stack_summary import TopicLister, summary
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
        # Stopping already: a second Ctrl-C or `make down`'s SIGTERM must not break off
        # the orderly stop half way (it did, with a traceback).
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        print("\nstopping...")
        stop_services(services)
        lists.close()  # before the clusters: its readers would log every refused reconnect
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
