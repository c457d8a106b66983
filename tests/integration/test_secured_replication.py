"""Replication between two secured clusters, from one MM2-style properties file.

``primary`` and ``backup`` listen on SASL_SSL with SCRAM-SHA-512 and run
StandardAuthorizer with ``allow.everyone.if.no.acl.found=false``
(:mod:`srm_local.secured`). The stack (a coordinator and a managed driver) logs in as one
SCRAM user holding exactly the ACLs ``srm-control acls --print`` lists for the driver and
the coordinator, configured as an MM2 user writes it: ``security.protocol``,
``sasl.mechanism``, ``sasl.jaas.config`` with the password, and
``ssl.truststore.location``/``.password`` of a JKS truststore. The test's own clients are
librdkafka with librdkafka's keys, so the data checked never depends on the product.

Then the password is searched for everywhere the stack wrote: its processes' output,
the answers of every GET of the driver and the coordinator, srm-control's output, and
every topic of both clusters (the event log, heartbeats, the raw metrics...).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from srm_harness.clients import consume_all, end_offsets, list_topics, produce
from srm_harness.compare import content, count_copy
from srm_harness.control import ControlGroup
from srm_harness.processes import (
    ChildProcess,
    CoordinatorProcess,
    DriverProcess,
    GatewayProcess,
    log_tails,
)
from srm_harness.records import Record
from srm_harness.secured import SecuredTestCluster
from srm_harness.waits import wait_until
from srm_local.secured import write_mm2_properties

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 3
FIRST, SECOND = 600, 450
SRM_CONTROL = str(Path(sys.executable).parent / "srm-control")


def _grant_least_privilege(config: Path, clusters: Mapping[str, SecuredTestCluster]) -> int:
    """Exactly the ACLs ``srm-control acls --print`` lists for ``config``
    (:func:`srm_common.required_acls.required_acls`), granted with the harness's admin
    client; the number of bindings."""
    from srm_common.config import load_config
    from srm_common.required_acls import required_acls

    needed = required_acls(load_config(config))  # every service's
    grouped: dict[tuple[str, str, str, str, str], set[str]] = {}
    for row in needed:
        b = row.binding
        assert b.permission == "ALLOW" and b.host == "*", b
        key = (row.cluster, b.principal, b.resource_type, b.name, b.pattern_type)
        grouped.setdefault(key, set()).add(b.operation)  # services share some
    for (alias, principal, resource, name, pattern), operations in grouped.items():
        clusters[alias].allow(principal, resource, name, *sorted(operations), pattern=pattern)
    return len({(r.cluster, r.binding) for r in needed})


def _settings(topic: str, prefix: str, group: str = "") -> dict[str, object]:
    return {
        "primary->backup.enabled": True,
        "primary->backup.topics": topic,
        **({"primary->backup.groups": group} if group else {}),
        "emit.checkpoints.interval.seconds": 1,
        "refresh.groups.interval.seconds": 1,
        # Short windows, so the aggregator publishes within the test.
        "srm.metrics.windows": "2000ms, 10000ms",
        "srm.metrics.grace.ms": 1000,
        "srm.metrics.update.ms": 500,
        "backup->primary.enabled": False,
        "replication.factor": 1,
        "heartbeats.topic.replication.factor": 1,
        "checkpoints.topic.replication.factor": 1,
        "offset-syncs.topic.replication.factor": 1,
        "offset.storage.replication.factor": 1,
        "refresh.topics.interval.seconds": 2,
        "sync.topic.configs.interval.seconds": 2,
        "emit.heartbeats.interval.seconds": 1,
        "srm.metrics.interval.ms": 1000,
        "srm.control.topic.prefix": prefix,
    }


def _records(start: int, count: int) -> list[Record]:
    now = int(time.time() * 1000)
    return [
        Record(
            f"k{n}".encode(),
            f"value {n} ".encode() * (1 + n % 7),
            (("seq", str(n).encode()), ("empty", None)),
            now - 1000 + n,
            n % PARTITIONS,
        )
        for n in range(start, start + count)
    ]


def _caught_up(
    primary: SecuredTestCluster, backup: SecuredTestCluster, topic: str, remote: str
) -> bool:
    ends = end_offsets(primary.bootstrap_servers, topic, primary.client_config())
    copies = end_offsets(backup.bootstrap_servers, remote, backup.client_config())
    return copies == ends


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _every_get(base: str, values: Mapping[str, str]) -> dict[str, tuple[int, bytes]]:
    """Every GET route the service's OpenAPI lists, path parameters filled from
    ``values`` (routes with a parameter not in ``values`` are left out), and the
    OpenAPI document itself; answers of any status (an error body could leak too)."""
    status, document = _get(f"{base}/openapi.json")
    assert status == 200, f"{base}/openapi.json: {status}"
    answers = {"/openapi.json": (status, document)}
    for path, operations in json.loads(document)["paths"].items():
        names = re.findall(r"{(\w+)}", path)
        if "get" not in operations or not set(names) <= set(values):
            continue
        filled = path
        for name in names:
            filled = filled.replace(f"{{{name}}}", urllib.parse.quote(values[name], safe=""))
        answers[filled] = _get(base + filled)
    return answers


def _srm_control(config: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SRM_CONTROL, "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _all_topic_bytes(cluster: SecuredTestCluster) -> dict[str, bytes]:
    """Every record (key, value, headers) of every topic but Kafka's own ``__*``."""
    client = cluster.client_config()
    names = list_topics(cluster.bootstrap_servers, client)
    found: dict[str, bytes] = {}
    for name in sorted(n for n in names if not n.startswith("__")):
        chunks: list[bytes] = []
        records = consume_all(
            cluster.bootstrap_servers, name, isolation_level="read_uncommitted", client=client
        )
        for partition in records.values():
            for record in partition:
                chunks += [record.key or b"", record.value or b""]
                chunks += [k.encode() + (v or b"") for k, v in record.headers]
        found[f"{cluster.alias}:{name}"] = b"\n".join(chunks)
    return found


def _plan_and_summary(config: Path) -> str:
    """What ``make up`` prints for this configuration: the plan and the summary."""
    from srm_common.config import load_config
    from srm_common.replication_plan import plan_replication, render_plan
    from srm_local.stack_summary import TopicLister, summary

    loaded = load_config(config)
    plan = render_plan(plan_replication(loaded, TopicLister(loaded)()))
    return plan + summary(loaded, config, [], list(loaded.clusters), [])


def _commit(
    cluster: SecuredTestCluster, group: str, offsets: Mapping[tuple[str, int], int]
) -> None:
    """Commit ``offsets`` for ``group`` as an application would (no records read)."""
    consumer = Consumer({**cluster.client_config(), "group.id": group})
    try:
        consumer.commit(
            offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()


def _checkpoints(backup: SecuredTestCluster, group: str) -> dict[tuple[str, int], tuple[int, int]]:
    """(remote topic, partition) -> (upstream, downstream offset), the latest of each."""
    from srm_common.domain.records import Checkpoint

    found: dict[tuple[str, int], tuple[int, int]] = {}
    topic = "primary.checkpoints.internal"
    if topic not in list_topics(backup.bootstrap_servers, backup.client_config()):
        return found
    records = consume_all(backup.bootstrap_servers, topic, client=backup.client_config())
    for partition in records.values():
        for record in partition:
            checkpoint = Checkpoint.decode(record.key, record.value)
            if checkpoint.consumer_group_id == group:
                key = (checkpoint.topic, checkpoint.partition)
                found[key] = (checkpoint.upstream_offset, checkpoint.downstream_offset)
    return found


def test_replicates_between_sasl_ssl_clusters_and_hides_the_password(
    kafka_secured, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    from srm_api_gateway.metric_names import METRICS

    primary, backup = kafka_secured["primary"], kafka_secured["backup"]
    secret = f"Kn0wn-{uuid.uuid4().hex[:12]}-pw"  # distinctive: found only where leaked
    user = unique_name("srm")[:60]
    srm = {c.alias: c.create_user(user, secret) for c in (primary, backup)}
    topic = kafka_secured.create_topic("primary", unique_name("orders"), partitions=PARTITIONS)
    remote = f"primary.{topic}"
    kafka_secured.created.append(("backup", remote))
    produce(primary.bootstrap_servers, topic, _records(0, FIRST), config=primary.client_config())
    # An application's group read part of each partition: checkpoints translate it.
    group = unique_name("app")
    commits = {(topic, p): 50 + 20 * p for p in range(PARTITIONS)}
    _commit(primary, group, commits)

    prefix = unique_name("sec")
    config = write_mm2_properties(
        tmp_path / "srm.properties",
        {alias: kafka_secured[alias].mm2_keys(cred) for alias, cred in srm.items()},
        _settings(topic, prefix, group),
    )
    # Secrets of the configuration: the SCRAM password and the trust store's password.
    secrets = {"SCRAM password": secret, "trust store password": primary.tls.password}
    for value in secrets.values():
        assert config.read_bytes().count(value.encode()) == 2, "the search finds what is there"
    granted = _grant_least_privilege(config, {"primary": primary, "backup": backup})
    # srm-control offsets, an operator's command, reads the checkpoints with MM2's
    # mirror client under a group of its own; acls --print lists services only.
    backup.allow(
        srm["backup"].principal, "group", "srm-mirror-client-", "DESCRIBE", pattern="PREFIXED"
    )
    table = _srm_control(config, "acls", "--print", "--format", "table")
    assert table.returncode == 0, table.stderr
    print(f"\nSRM's principal holds exactly srm-control acls --print's {granted} bindings")

    coordinator = CoordinatorProcess(
        config, tmp_path / "coordinator.log", "c1", "--state-file", str(tmp_path / "c1.json")
    )
    driver = DriverProcess(
        config, tmp_path / "d1.log", spark_master="local[1]", args=["--id", "d1"]
    )
    driver.env["SPARK_LOCAL_DIRS"] = str(tmp_path / "spark-local")
    aggregator = ChildProcess(
        "srm_metrics_aggregator",
        ["--config", str(config), "--cluster", "backup", "--data-dir", str(tmp_path / "faust")],
        tmp_path / "aggregator.log",
    )
    gateway = GatewayProcess(
        config, tmp_path / "gateway.log", f"sqlite:///{tmp_path / 'gateway.db'}"
    )
    services = [coordinator, driver, aggregator, gateway]
    logs = log_tails(services, 3000)
    control_outputs: dict[str, str] = {}
    answers: dict[str, bytes] = {}
    try:
        for service in services:
            service.start()
        wait_until(
            lambda: (
                end_offsets(backup.bootstrap_servers, remote, backup.client_config()).get(0, 0) > 0
            ),
            300,
            "the driver copies into the remote topic",
            step=2,
            detail=logs,
        )
        produce(
            primary.bootstrap_servers,
            topic,
            _records(FIRST, SECOND),
            config=primary.client_config(),
        )
        wait_until(
            lambda: _caught_up(primary, backup, topic, remote),
            180,
            "the copy catches up",
            step=1,
            detail=logs,
        )
        source = consume_all(primary.bootstrap_servers, topic, client=primary.client_config())
        target = consume_all(
            backup.bootstrap_servers,
            remote,
            isolation_level="read_uncommitted",
            client=backup.client_config(),
        )
        count = count_copy(source, target)
        print(f"secured replication (SASL_SSL, SCRAM-SHA-512, StandardAuthorizer): {count}")
        assert count.produced == FIRST + SECOND
        assert (count.missing, count.duplicated) == (0, 0)
        for partition in range(PARTITIONS):
            assert content(target[partition]) == content(source[partition])

        # Checkpoints: every commit of the group, translated for the remote topic.
        expected = {(f"primary.{t}", p): o for (t, p), o in commits.items()}
        wait_until(
            lambda: {k: up for k, (up, _down) in _checkpoints(backup, group).items()} == expected,
            120,
            "checkpoints of the group",
            detail=logs,
        )
        translated = _checkpoints(backup, group)
        print(f"checkpoints of {group}: (upstream, downstream) {sorted(translated.items())}")
        for upstream, downstream in translated.values():
            # A record a group has not read on primary is never skipped on backup.
            assert 0 <= downstream <= upstream

        # The aggregator publishes windows of the raw metrics (short windows, see above).
        wait_until(
            lambda: (
                sum(
                    end_offsets(
                        backup.bootstrap_servers,
                        "srm-metrics-aggregated.internal",
                        backup.client_config(),
                    ).values()
                )
                > 0
            ),
            120,
            "aggregated metrics on backup",
            detail=logs,
        )
        gateway_url = gateway.url()
        assert gateway_url is not None, gateway.log_text()[-2000:]
        wait_until(
            lambda: _get(f"{gateway_url}/v2/replications")[0] == 200, 60, "the gateway answers"
        )

        # Every GET of every service, as any caller sees them.
        state = ControlGroup(config).state()
        assert state.leader is not None
        values = {
            "source": "primary",
            "target": "backup",
            "upstreamTopic": topic,
            "downstreamTopic": remote,
            "topic": topic,
            "group": group,
            "metric": next(iter(METRICS)),
        }
        for service, base in (
            ("driver", state.drivers["d1"].url),
            ("coordinator", state.leader.url),
            ("gateway", gateway_url),
        ):
            for path, (_status, body) in _every_get(base, values).items():
                answers[f"GET {service} {path}"] = body
        for args in (
            ("topics", "--source", "primary", "--target", "backup", "--list"),
            ("offsets", "--source", "primary", "--target", "backup", "--group", group),
            ("audit",),
            ("acls", "--print"),
        ):
            done = _srm_control(config, *args)
            assert done.returncode == 0, f"srm-control {args}: {done.stderr}"
            control_outputs[" ".join(args)] = done.stdout + done.stderr
    finally:
        for service in reversed(services):
            if service.alive():
                service.stop()

    # The search: everything the stack wrote, bar the configuration file it was given.
    places: dict[str, bytes] = {}
    for path in sorted(tmp_path.rglob("*")):
        if path.is_file() and path != config:
            places[f"file {path.relative_to(tmp_path)}"] = path.read_bytes()
    places.update(answers)
    places["make up's plan and summary"] = _plan_and_summary(config).encode()
    places.update({f"srm-control {k}": v.encode() for k, v in control_outputs.items()})
    for cluster in (primary, backup):
        places.update({f"topic {k}": v for k, v in _all_topic_bytes(cluster).items()})
    hits = {
        (what, where): text.count(value.encode())
        for what, value in secrets.items()
        for where, text in places.items()
    }
    leaked = {key: n for key, n in hits.items() if n}
    topics = sorted(p for p in places if p.startswith("topic "))
    files = sorted(p for p in places if p.startswith("file "))
    print(
        f"secret grep ({', '.join(secrets)}): {sum(hits.values())} hits in {len(places)} places"
        f" searched: {len(files)} files the processes wrote, {len(answers)} REST answers"
        f" (every GET of the driver, the coordinator and the gateway),"
        f" {len(control_outputs)} srm-control outputs, make up's plan and summary,"
        f" {len(topics)} topics"
    )
    print("  files: " + ", ".join(f[5:] for f in files))
    print("  topics: " + ", ".join(t[6:] for t in topics))
    assert f"topic backup:{prefix}.log.internal" in places, "the event log was searched"
    assert "topic backup:srm-metrics-raw.internal" in places, "raw metrics were searched"
    assert "topic backup:srm-metrics-aggregated.internal" in places, "and aggregated ones"
    assert "file gateway.db" in places, "the gateway's read model was searched"
    assert not leaked, f"secrets appear in: {leaked}"

    # What the services complained about under least privilege (for the record).
    for process in services:
        complaints = sorted(
            {
                line.split(" ", 3)[-1][:160]
                for line in process.log_text().splitlines()
                if " ERROR " in line or " WARNING " in line
            }
        )
        print(f"{process.log_path.name}: {len(complaints)} distinct warnings/errors")
        for line in complaints[:8]:
            print(f"  {line}")
        assert "Traceback" not in process.log_text(), process.log_path.name
