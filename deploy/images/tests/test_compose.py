"""docker-compose.yml and deploy/compose/srm.yaml read as files: no Docker needed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml
from srm_common.config import load_config

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def test_the_compose_configuration_is_make_ups_with_in_network_addresses() -> None:
    local = load_config(ROOT / "deploy" / "local" / "srm.yaml")
    compose = load_config(
        ROOT / "deploy" / "compose" / "srm.yaml",
        overrides={
            "primary.bootstrap.servers": "127.0.0.1:9092",
            "backup.bootstrap.servers": "127.0.0.1:9192",
        },
    )
    assert dataclasses.replace(compose, source=local.source) == local
    in_network = load_config(ROOT / "deploy" / "compose" / "srm.yaml")
    servers = {a: c.bootstrap_servers for a, c in in_network.clusters.items()}
    assert servers == {"primary": ("primary:9092",), "backup": ("backup:9092",)}


def test_clusters_publish_make_ups_ports_on_loopback_only() -> None:
    assert SERVICES["primary"]["ports"] == ["127.0.0.1:${SRM_PRIMARY_PORT:-9092}:9094"]
    assert SERVICES["backup"]["ports"] == ["127.0.0.1:${SRM_BACKUP_PORT:-9192}:9094"]
    for alias, port in (("primary", "SRM_PRIMARY_PORT:-9092"), ("backup", "SRM_BACKUP_PORT:-9192")):
        environment = SERVICES[alias]["environment"]
        assert environment["KAFKA_ADVERTISED_EXTERNAL"] == f"127.0.0.1:${{{port}}}"
        assert environment["KAFKA_ADVERTISED_INTERNAL"] == f"{alias}:9092"
        assert SERVICES[alias]["volumes"] == [f"{alias}-data:/var/lib/kafka"]
    assert set(COMPOSE["volumes"]) == {"primary-data", "backup-data", "postgres-data"}


def test_one_driver_set_per_target_each_pinned_to_it() -> None:
    """SRM's Driver Target Cluster: each site's drivers run the flows into it only."""
    for alias in ("primary", "backup"):
        command = SERVICES[f"driver-{alias}"]["command"]
        assert command[command.index("--target") + 1] == alias
    assert "driver" not in SERVICES, "no driver set serving every target"


def test_drivers_scale_and_every_service_is_watched() -> None:
    for name in ("driver-primary", "driver-backup"):
        driver = SERVICES[name]
        # --scale driver-backup=N needs replicas that differ: no fixed name, port or id.
        assert "container_name" not in driver and "ports" not in driver
        assert "--id" not in driver["command"]
    # The aggregators answer nothing (Faust's web server is off): no health check; their
    # process exiting is what the restart policy sees.
    aggregators = {"metrics-aggregator-primary", "metrics-aggregator-backup"}
    for name, service in SERVICES.items():
        assert service["restart"] == "unless-stopped", name
        if name in aggregators:
            assert "healthcheck" not in service, name
        elif name == "postgres":
            assert service["healthcheck"]["test"][:2] == ["CMD", "pg_isready"], name
        else:
            assert service["healthcheck"]["test"][:2] == ["CMD", "srm-healthcheck"], name
    drivers = ("driver-primary", "driver-backup")
    for name in ("coordinator-1", "coordinator-2", *drivers, "gateway", *aggregators):
        assert "./deploy/compose:/etc/srm:ro" in SERVICES[name]["volumes"], name


def test_one_metrics_aggregator_per_cluster_folds_its_raw_metrics() -> None:
    for alias in ("primary", "backup"):
        service = SERVICES[f"metrics-aggregator-{alias}"]
        assert service["image"] == "srm/metrics-aggregator:latest"
        assert service["command"] == ["--config", "/etc/srm/srm.yaml", "--cluster", alias]
        assert "ports" not in service


def test_the_gateways_read_model_is_in_postgres_with_the_password_from_a_secret() -> None:
    postgres = SERVICES["postgres"]
    assert postgres["image"] == "srm/postgres:latest"
    assert "ports" not in postgres, "the database answers inside the network only"
    assert postgres["volumes"] == ["postgres-data:/var/lib/postgresql/data"]
    assert postgres["secrets"] == ["srm-db-password"]
    assert postgres["environment"]["SRM_DB_PASSWORD_FILE"] == "/run/secrets/srm-db-password"
    gateway = SERVICES["gateway"]
    command = gateway["command"]
    url = command[command.index("--db-url") + 1]
    assert url == "postgresql+psycopg://srm@postgres:5432/srm", "no password in the URL"
    assert command[command.index("--db-password-file") + 1] == "/run/secrets/srm-db-password"
    assert "srm-db-password" in gateway["secrets"]
    assert gateway["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert {"primary", "backup"} <= set(gateway["depends_on"])
    secret = COMPOSE["secrets"]["srm-db-password"]["file"]
    assert secret == "${SRM_DB_PASSWORD_FILE:-./.run/compose/db-password}"
    assert set(postgres["environment"]) == {"SRM_DB_NAME", "SRM_DB_USER", "SRM_DB_PASSWORD_FILE"}


def test_every_http_api_takes_changes_only_with_tokens_from_secrets() -> None:
    """The tokens file (hashes) reaches every service, each client's own token by path;
    no token is written in this file or on a command line."""
    http = {"coordinator-1", "coordinator-2", "driver-primary", "driver-backup", "gateway"}
    for name in http:
        service = SERVICES[name]
        assert service["environment"]["SRM_HTTP_TOKENS_FILE"] == "/run/secrets/srm-http-tokens"
        assert "srm-http-tokens" in service["secrets"], name
    for name in ("driver-primary", "driver-backup"):
        driver = SERVICES[name]
        assert driver["environment"]["SRM_TOKEN_FILE"] == "/run/secrets/srm-driver-token"
        assert "srm-driver-token" in driver["secrets"]
    command = SERVICES["gateway"]["command"]
    assert command[command.index("--token-file") + 1] == "/run/secrets/srm-gateway-token"
    assert "srm-gateway-token" in SERVICES["gateway"]["secrets"]
    files = {name: secret["file"] for name, secret in COMPOSE["secrets"].items()}
    assert files["srm-http-tokens"] == "${SRM_HTTP_DIR:-./.run/compose/http}/tokens"
    assert (ROOT / "deploy" / "images" / "http_tokens.sh").stat().st_mode & 0o111
