"""deploy/k8s read as files: Kubernetes' schemas, then what schemas cannot see.

No cluster and no network: kubernetes-validate ships the API's JSON schemas inside the
package, and the test forbids sockets while it validates, so a validator that wanted to
download a schema would fail here rather than in CI.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import all_versions
from srm_common.config import load_config

K8S = Path(__file__).resolve().parents[1]
ROOT = K8S.parents[1]
# The oldest Kubernetes release still commonly run, and the newest the package knows.
VERSIONS = ("1.29", all_versions()[-1])
IMAGES = {
    "srm-coordinator": "coordinator",
    "srm-driver": "driver",
    "srm-api-gateway": "api-gateway",
    "srm-metrics-aggregator": "metrics-aggregator",
    # The Spark cluster of the copy work runs from the driver image (spark.yaml).
    "srm-spark-master": "driver",
    "srm-spark-worker": "driver",
}
# The services whose HTTP API serves probes and reads the tokens file.
HTTP_SERVICES = {"srm-coordinator", "srm-driver", "srm-api-gateway"}
# SRM's own services (srm.yaml, their command's parser), as opposed to Spark's daemons.
SRM_SERVICES = HTTP_SERVICES | {"srm-metrics-aggregator"}
SPARK_DAEMONS = {"srm-spark-master", "srm-spark-worker"}


def _documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


KUSTOMIZATION = yaml.safe_load((K8S / "kustomization.yaml").read_text())
APPLIED = [doc for name in KUSTOMIZATION["resources"] for doc in _documents(K8S / name)]
EXAMPLE_SECRETS = _documents(K8S / "secrets.example.yaml")
WORKLOADS = {
    doc["metadata"]["name"]: doc for doc in APPLIED if doc["kind"] in ("Deployment", "StatefulSet")
}


def _kind(name: str) -> str:
    """The service a workload runs: ``srm-driver-backup`` (one driver set per target
    cluster) is ``srm-driver``, ``srm-metrics-aggregator-backup`` (one per cluster)
    ``srm-metrics-aggregator``."""
    for kind in ("srm-driver", "srm-metrics-aggregator"):
        if name.startswith(f"{kind}-"):
            return kind
    return name


def _containers(kinds: set[str] | None = None) -> Iterator[tuple[str, dict, dict]]:
    """(the service a workload runs, its pod spec, a container) of every workload (of
    the services ``kinds`` only, when given)."""
    for name, workload in WORKLOADS.items():
        pod = workload["spec"]["template"]["spec"]
        for container in pod["containers"]:
            if kinds is None or _kind(name) in kinds:
                yield _kind(name), pod, container


def _env(container: dict) -> dict[str, str | None]:
    return {item["name"]: item.get("value") for item in container.get("env", [])}


def _spark_conf(container: dict) -> dict[str, str]:
    """A driver container's ``--spark-conf KEY=VALUE`` settings."""
    args = container["args"]
    pairs = [args[i + 1] for i, arg in enumerate(args) if arg == "--spark-conf"]
    return dict(pair.split("=", 1) for pair in pairs)


def _option(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def _bytes(size: str) -> int:
    """A Spark (``2g``) or Kubernetes (``4Gi``) memory size in bytes."""
    units = {"g": 2**30, "m": 2**20, "Gi": 2**30, "Mi": 2**20}
    for unit in sorted(units, key=len, reverse=True):
        if size.endswith(unit):
            return int(size[: -len(unit)]) * units[unit]
    raise ValueError(size)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the manifests' validation tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_kustomization_applies_every_manifest_but_the_secret_template() -> None:
    manifests = {path.name for path in K8S.glob("*.yaml")}
    expected = manifests - {"kustomization.yaml", "secrets.example.yaml"}
    assert sorted(KUSTOMIZATION["resources"]) == sorted(expected)
    assert KUSTOMIZATION["namespace"] == "srm"
    assert {doc["metadata"].get("namespace", "srm") for doc in APPLIED} == {"srm"}


@pytest.mark.usefixtures("no_network")
@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_is_valid_against_the_kubernetes_schemas(version: str) -> None:
    # strict: a misspelt or misplaced field is an error (the schemas forbid extra keys).
    for doc in (*APPLIED, *EXAMPLE_SECRETS):
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_validator_catches_a_misplaced_field() -> None:
    broken = yaml.safe_load(yaml.safe_dump(WORKLOADS["srm-driver-backup"]))
    broken["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[0], strict=True)


def test_the_services_run_their_images_with_arguments_their_command_accepts() -> None:
    import srm_api_gateway.cli
    import srm_coordinator.cli
    import srm_driver.cli
    import srm_metrics_aggregator.cli

    parsers = {
        "srm-coordinator": srm_coordinator.cli._parser(),
        "srm-driver": srm_driver.cli._parser(),
        "srm-api-gateway": srm_api_gateway.cli._parser(),
        "srm-metrics-aggregator": srm_metrics_aggregator.cli._parser(),
    }
    assert {_kind(name) for name in WORKLOADS} == set(IMAGES)
    for name, _pod, container in _containers():
        image = IMAGES[name]
        assert container["image"] == f"srm/{image}:latest"  # as `make images` tags them
        assert (ROOT / "deploy" / "images" / image / "Dockerfile").exists()
        env = set(_env(container))
        args = container["args"]
        for arg in args:  # $(VAR) is expanded by Kubernetes from the container's env
            if arg.startswith("$("):
                assert arg[2:-1] in env, (name, arg)
        for value in _env(container).values():
            if value and value.startswith("$("):
                assert value[2:-1] in env, (name, value)
        if name in SPARK_DAEMONS:
            continue  # test_the_spark_cluster_is_sized_for_the_drivers_and_authenticated
        parsed = parsers[name].parse_args(args)
        assert str(parsed.config) == "/etc/srm/srm.yaml"
        # Advertised URLs must be reachable from other pods: the pod IP, not a host name.
        if name in ("srm-coordinator", "srm-driver"):
            assert parsed.host == "$(POD_IP)" and parsed.id == "$(POD_NAME)"


def test_the_configmap_is_a_valid_srm_yaml(tmp_path: Path) -> None:
    (configmap,) = [doc for doc in APPLIED if doc["kind"] == "ConfigMap"]
    path = tmp_path / "srm.yaml"
    path.write_text(configmap["data"]["srm.yaml"])
    config = load_config(path)
    assert {flow.name for flow in config.flows.values() if flow.enabled} == {
        "primary->backup",
        "backup->primary",
    }
    for _name, pod, container in _containers():
        mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        assert set(mounts) == set(volumes)
    for _name, pod, container in _containers(SRM_SERVICES):
        mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        assert mounts["config"] == "/etc/srm"
        assert volumes["config"]["configMap"]["name"] == configmap["metadata"]["name"]


def test_secrets_are_mounted_as_files_and_templated_not_applied() -> None:
    templated = {doc["metadata"]["name"] for doc in EXAMPLE_SECRETS}
    assert not [doc for doc in APPLIED if doc["kind"] == "Secret"]
    for name, pod, container in _containers():
        mounts = {mount["name"]: mount for mount in container["volumeMounts"]}
        secrets = {v["name"]: v["secret"] for v in pod["volumes"] if "secret" in v}
        # Whatever opens a Kafka client (the copy slots on Spark's workers too) has the
        # clusters' credentials; plaintext clusters need none: pods start without them.
        if name != "srm-spark-master":
            assert secrets["cluster-credentials"]["secretName"] == "srm-cluster-credentials"
            assert secrets["cluster-credentials"]["optional"] is True
        for volume, secret in secrets.items():
            assert secret["secretName"] in templated
            assert mounts[volume]["readOnly"] is True
            assert mounts[volume]["mountPath"].startswith("/var/run/secrets/srm/"), name
    gateway = WORKLOADS["srm-api-gateway"]["spec"]["template"]["spec"]["containers"][0]
    token = gateway["args"][gateway["args"].index("--token-file") + 1]
    assert token == "/var/run/secrets/srm/gateway/token"


@cache
def _routes(name: str) -> set[str]:
    from srm_common.adapters.http_auth import access_for

    if name == "srm-driver":
        from srm_driver.rest import create_app

        app = create_app(None, access_for({}))  # type: ignore[arg-type]
    elif name == "srm-coordinator":
        from srm_coordinator.http_api import create_app

        app = create_app(None, access_for({}))  # type: ignore[arg-type]
    else:
        from srm_api_gateway.http_api import create_app

        config = load_config(ROOT / "deploy" / "compose" / "srm.yaml")
        app = create_app(config, None, access=access_for({}))  # type: ignore[arg-type]
    return {route.path for route in app.routes if "GET" in getattr(route, "methods", ())}


def test_probes_ask_health_endpoints_the_services_serve() -> None:
    expected = {
        "srm-coordinator": ("/v1/leader", "/v1/leader"),
        "srm-driver": ("/v1/flows", "/v1/driver"),
        "srm-api-gateway": ("/healthz", "/readyz"),
    }
    for _name, _pod, container in _containers(SPARK_DAEMONS):
        # Spark's daemons: their web UI's JSON status (the master's lists its workers).
        for kind in ("startup", "liveness", "readiness"):
            assert container[f"{kind}Probe"]["httpGet"] == {"path": "/json/", "port": "http"}
        (web,) = [port["containerPort"] for port in container["ports"] if port["name"] == "http"]
        assert str(web) == container["args"][container["args"].index("--webui-port") + 1]
    # The aggregators serve no HTTP (Faust's web server is off): a failing one exits.
    for _name, _pod, container in _containers({"srm-metrics-aggregator"}):
        assert "ports" not in container and "livenessProbe" not in container
    for name, _pod, container in _containers(HTTP_SERVICES):
        ports = {port["name"]: port["containerPort"] for port in container["ports"]}
        probes = {kind: container[f"{kind}Probe"] for kind in ("startup", "liveness", "readiness")}
        for probe in probes.values():
            assert probe["httpGet"]["port"] in ports
            assert probe["httpGet"]["path"] in _routes(name), (name, probe)
        assert (probes["liveness"]["httpGet"]["path"], probes["readiness"]["httpGet"]["path"]) == (
            expected[name]
        )
        assert str(ports["http"]) in container["args"] or name == "srm-api-gateway"


def test_every_container_has_requests_and_limits() -> None:
    units = {"Mi": 2**20, "Gi": 2**30}
    for name, pod, container in _containers():
        resources = container["resources"]
        for kind in ("requests", "limits"):
            assert set(resources[kind]) == {"cpu", "memory"}, (name, kind)
        memory = {
            k: int(v[:-2]) * units[v[-2:]]
            for k, v in (
                ("requests", resources["requests"]["memory"]),
                ("limits", resources["limits"]["memory"]),
            )
        }
        assert memory["requests"] <= memory["limits"], name
        assert pod["securityContext"]["runAsUser"] == 10001  # the images' user srm
        assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_services_and_budgets_select_their_workloads() -> None:
    labels = {name: w["spec"]["template"]["metadata"]["labels"] for name, w in WORKLOADS.items()}
    drivers = [name for name in WORKLOADS if _kind(name) == "srm-driver"]
    assert sorted(drivers) == ["srm-driver-backup", "srm-driver-primary"]
    for name, workload in WORKLOADS.items():
        assert workload["spec"]["selector"]["matchLabels"].items() <= labels[name].items()
    for doc in APPLIED:
        if doc["kind"] == "Service":
            selector = doc["spec"]["selector"].items()
            (target,) = [name for name, pod in labels.items() if selector <= pod.items()]
            (container,) = WORKLOADS[target]["spec"]["template"]["spec"]["containers"]
            names = {port["name"] for port in container["ports"]}
            assert {port["targetPort"] for port in doc["spec"]["ports"]} <= names
        if doc["kind"] == "PodDisruptionBudget":
            selector = doc["spec"]["selector"]["matchLabels"].items()
            assert [name for name, pod in labels.items() if selector <= pod.items()]
    coordinators = WORKLOADS["srm-coordinator"]
    assert coordinators["kind"] == "StatefulSet" and coordinators["spec"]["replicas"] == 2
    assert coordinators["spec"]["serviceName"] in {d["metadata"]["name"] for d in APPLIED}


def test_drivers_never_let_spark_run_a_copy_task_twice() -> None:
    from srm_driver.spark import check_spark_settings

    for name in ("srm-driver-backup", "srm-driver-primary"):
        driver = WORKLOADS[name]
        (container,) = driver["spec"]["template"]["spec"]["containers"]
        env = _env(container)
        check_spark_settings(env["SRM_SPARK_MASTER"], _spark_conf(container))
        assert driver["kind"] == "Deployment"
        # A new driver joins before an old one leaves; SIGTERM gets time to hand over.
        assert driver["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
        assert driver["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 60


def test_one_driver_set_per_target_cluster_each_pinned_to_it(tmp_path: Path) -> None:
    """SRM's Driver Target Cluster: each set runs the flows into its cluster only."""
    import srm_driver.cli

    (configmap,) = [doc for doc in APPLIED if doc["kind"] == "ConfigMap"]
    path = tmp_path / "srm.yaml"
    path.write_text(configmap["data"]["srm.yaml"])
    targets = {flow.target for flow in load_config(path).flows.values()}
    pinned = {}
    for name, workload in WORKLOADS.items():
        if _kind(name) == "srm-driver":
            (container,) = workload["spec"]["template"]["spec"]["containers"]
            pinned[name] = srm_driver.cli._parser().parse_args(container["args"]).target
    assert pinned == {f"srm-driver-{alias}": alias for alias in targets}


def test_one_aggregator_set_per_cluster_the_drivers_write_to(tmp_path: Path) -> None:
    """The drivers write their raw metrics to their target cluster; without its
    aggregator, the gateway's metrics of that cluster stay empty."""
    import srm_metrics_aggregator.cli

    (configmap,) = [doc for doc in APPLIED if doc["kind"] == "ConfigMap"]
    path = tmp_path / "srm.yaml"
    path.write_text(configmap["data"]["srm.yaml"])
    targets = {flow.target for flow in load_config(path).flows.values()}
    folded = {}
    for name, workload in WORKLOADS.items():
        if _kind(name) == "srm-metrics-aggregator":
            pod = workload["spec"]["template"]["spec"]
            (container,) = pod["containers"]
            args = srm_metrics_aggregator.cli._parser().parse_args(container["args"])
            folded[name] = args.cluster
            # Faust's data folder on a writable volume (the root file system is read-only).
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            (volume,) = [mounts[m] for m in mounts if args.data_dir.startswith(m + "/")]
            assert "emptyDir" in {v["name"]: v for v in pod["volumes"]}[volume]
    assert folded == {f"srm-metrics-aggregator-{alias}": alias for alias in targets}


def test_the_spark_cluster_is_sized_for_the_drivers_and_authenticated() -> None:
    master = WORKLOADS["srm-spark-master"]["spec"]["template"]["spec"]["containers"][0]
    worker_set = WORKLOADS["srm-spark-worker"]
    worker = worker_set["spec"]["template"]["spec"]["containers"][0]
    assert master["command"] == ["spark-class", "org.apache.spark.deploy.master.Master"]
    assert worker["command"] == ["spark-class", "org.apache.spark.deploy.worker.Worker"]
    # Executors and the master are reached at their pod IP (no pod host name resolves).
    assert _option(master["args"], "--host") == _option(worker["args"], "--host") == "$(POD_IP)"
    (service,) = [
        d for d in APPLIED if d["kind"] == "Service" and d["metadata"]["name"] == "srm-spark-master"
    ]
    (port,) = service["spec"]["ports"]
    ports = {p["name"]: p["containerPort"] for p in master["ports"]}
    assert str(ports[port["targetPort"]]) == _option(master["args"], "--port")
    url = f"spark://{service['metadata']['name']}:{port['port']}"
    assert worker["args"][-1] == url
    drivers = [WORKLOADS[n] for n in WORKLOADS if _kind(n) == "srm-driver"]
    wanted = 0
    for driver in drivers:
        (container,) = driver["spec"]["template"]["spec"]["containers"]
        env, conf = _env(container), _spark_conf(container)
        assert env["SRM_SPARK_MASTER"] == url
        assert env["SPARK_LOCAL_IP"] == "$(POD_IP)"  # executors connect back to the driver
        wanted += driver["spec"]["replicas"] * int(conf["spark.cores.max"])
        # Every executor of a driver fits on one worker, cores and memory alike.
        executors = int(_option(worker["args"], "--cores")) // int(conf["spark.executor.cores"])
        assert executors >= 1
        assert executors * _bytes(conf["spark.executor.memory"]) <= _bytes(
            _option(worker["args"], "--memory")
        )
    # Every driver gets its cores: a driver left without executors would wait, not copy.
    offered = worker_set["spec"]["replicas"] * int(_option(worker["args"], "--cores"))
    assert wanted <= offered, f"drivers want {wanted} cores, workers offer {offered}"
    assert _bytes(_option(worker["args"], "--memory")) < _bytes(
        worker["resources"]["limits"]["memory"]
    )
    # One shared secret for master, workers, executors and drivers, from a mounted file.
    example = {d["metadata"]["name"]: d for d in EXAMPLE_SECRETS}["srm-spark-auth"]
    settings = dict(
        line.split(None, 1) for line in example["stringData"]["spark-defaults.conf"].splitlines()
    )
    assert settings["spark.authenticate"] == "true"
    assert settings["spark.network.crypto.enabled"] == "true"
    assert "spark.authenticate.secret" in settings
    for _name, pod, container in (*_containers(SPARK_DAEMONS), *_containers({"srm-driver"})):
        volumes = {v["name"]: v for v in pod["volumes"]}
        (mount,) = [
            m["mountPath"]
            for m in container["volumeMounts"]
            if volumes[m["name"]].get("secret", {}).get("secretName") == "srm-spark-auth"
        ]
        assert _env(container)["SPARK_CONF_DIR"] == mount


def test_every_http_api_reads_the_tokens_file_and_clients_bear_their_own_token() -> None:
    for name, pod, container in _containers(HTTP_SERVICES):
        env = {e["name"]: e.get("value") for e in container["env"]}
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
        assert env["SRM_HTTP_TOKENS_FILE"] == f"{mounts['http-tokens']}/tokens", name
        assert secrets["http-tokens"] == "srm-http-tokens", name
        if name == "srm-driver":
            assert env["SRM_TOKEN_FILE"] == f"{mounts['driver-token']}/token"
            assert secrets["driver-token"] == "srm-driver-token"
    (configmap,) = [doc for doc in APPLIED if doc["kind"] == "ConfigMap"]
    assert "srm.http.allowed.hosts: >-" in configmap["data"]["srm.yaml"]
    assert "srm-api-gateway.srm.svc" in configmap["data"]["srm.yaml"]


def test_the_gateways_postgresql_is_an_optional_external_url_from_a_secret(tmp_path: Path) -> None:
    import srm_api_gateway.cli

    images = {container["image"] for _name, _pod, container in _containers()}
    assert images == {f"srm/{image}:latest" for image in IMAGES.values()}, (
        "no database runs in the manifests"
    )
    pod = WORKLOADS["srm-api-gateway"]["spec"]["template"]["spec"]
    args = srm_api_gateway.cli._parser().parse_args(pod["containers"][0]["args"])
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert volumes["db"]["secret"] == {"secretName": "srm-gateway-db", "optional": True}
    assert str(args.db_url_file) == f"{mounts['db']}/url"
    # Without the Secret: SQLite in a writable emptyDir (the root file system is read-only).
    assert "emptyDir" in volumes["read-model"] and str(args.state_dir) == mounts["read-model"]
    example = {d["metadata"]["name"]: d for d in EXAMPLE_SECRETS}["srm-gateway-db"]
    assert example["stringData"]["url"].startswith("postgresql+psycopg://")
    # The URL file is read when present, and its absence means the default.
    assert srm_api_gateway.cli._url_in(tmp_path / "url") is None
    (tmp_path / "url").write_text(example["stringData"]["url"] + "\n")
    assert srm_api_gateway.cli._url_in(tmp_path / "url") == example["stringData"]["url"]
