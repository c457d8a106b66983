"""What `make up` prints once its stack runs: the flows, the services and where they
answer, the tokens, and the topics each cluster has (listed by :class:`TopicLister`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from srm_common.config import SrmConfig
from srm_common.replication_plan import describe_allowed

from srm_local.clusters import (
    LocalKafkaCluster,
)
from srm_local.http_tokens import TOKENS_FILE
from srm_local.paths import run_dir
from srm_local.services import (
    ServiceProcess,
)


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
