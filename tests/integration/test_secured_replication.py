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

import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest
from srm_local import testing
from srm_local.secured import SecuredCluster, write_mm2_properties
from srm_local.testing import Record

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 3
FIRST, SECOND = 600, 450
SRM_CONTROL = str(Path(sys.executable).parent / "srm-control")


def _grant_least_privilege(config: Path, clusters: Mapping[str, SecuredCluster]) -> int:
    """Exactly the driver's and the coordinator's ACLs that ``srm-control acls --print``
    lists for ``config`` (:func:`srm_common.required_acls.required_acls`), granted with the
    harness's admin client; the number of bindings."""
    from srm_common.config import load_config
    from srm_common.required_acls import required_acls

    needed = [
        r for r in required_acls(load_config(config)) if r.service in ("driver", "coordinator")
    ]
    grouped: dict[tuple[str, str, str, str, str], set[str]] = {}
    for row in needed:
        b = row.binding
        assert b.permission == "ALLOW" and b.host == "*", b
        key = (row.cluster, b.principal, b.resource_type, b.name, b.pattern_type)
        grouped.setdefault(key, set()).add(b.operation)  # services share some
    for (alias, principal, resource, name, pattern), operations in grouped.items():
        clusters[alias].allow(principal, resource, name, *sorted(operations), pattern=pattern)
    return len({(r.cluster, r.binding) for r in needed})


def _settings(topic: str, prefix: str) -> dict[str, object]:
    return {
        "primary->backup.enabled": True,
        "primary->backup.topics": topic,
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


def _caught_up(primary: SecuredCluster, backup: SecuredCluster, topic: str, remote: str) -> bool:
    ends = testing.end_offsets(primary.bootstrap_servers, topic, primary.client_config())
    copies = testing.end_offsets(backup.bootstrap_servers, remote, backup.client_config())
    return copies == ends


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _srm_control(config: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SRM_CONTROL, "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _all_topic_bytes(cluster: SecuredCluster) -> dict[str, bytes]:
    """Every record (key, value, headers) of every topic but Kafka's own ``__*``."""
    client = cluster.client_config()
    names = testing.list_topics(cluster.bootstrap_servers, client)
    found: dict[str, bytes] = {}
    for name in sorted(n for n in names if not n.startswith("__")):
        chunks: list[bytes] = []
        records = testing.consume_all(
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
    from srm_local.stack import TopicLister, summary

    loaded = load_config(config)
    plan = render_plan(plan_replication(loaded, TopicLister(loaded)()))
    return plan + summary(loaded, config, [], list(loaded.clusters), [])


def test_replicates_between_sasl_ssl_clusters_and_hides_the_password(
    kafka_secured, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    primary, backup = kafka_secured["primary"], kafka_secured["backup"]
    secret = f"Kn0wn-{uuid.uuid4().hex[:12]}-pw"  # distinctive: found only where leaked
    user = unique_name("srm")[:60]
    srm = {c.alias: c.create_user(user, secret) for c in (primary, backup)}
    topic = kafka_secured.create_topic("primary", unique_name("orders"), partitions=PARTITIONS)
    remote = f"primary.{topic}"
    kafka_secured.created.append(("backup", remote))
    testing.produce(
        primary.bootstrap_servers, topic, _records(0, FIRST), config=primary.client_config()
    )

    prefix = unique_name("sec")
    config = write_mm2_properties(
        tmp_path / "srm.properties",
        {alias: kafka_secured[alias].mm2_keys(cred) for alias, cred in srm.items()},
        _settings(topic, prefix),
    )
    assert config.read_bytes().count(secret.encode()) == 2, "the search finds what is there"
    granted = _grant_least_privilege(config, {"primary": primary, "backup": backup})
    table = _srm_control(config, "acls", "--print", "--format", "table")
    assert table.returncode == 0, table.stderr
    print(f"\nSRM's principal holds exactly srm-control acls --print's {granted} bindings:")
    print(table.stdout)
    coordinator = testing.CoordinatorProcess(
        config, tmp_path / "coordinator.log", "c1", "--state-file", str(tmp_path / "c1.json")
    )
    driver = testing.DriverProcess(
        config, tmp_path / "d1.log", spark_master="local[1]", args=["--id", "d1"]
    )
    driver.env["SPARK_LOCAL_DIRS"] = str(tmp_path / "spark-local")
    logs = testing.log_tails([coordinator, driver], 3000)
    control_outputs: dict[str, str] = {}
    answers: dict[str, bytes] = {}
    try:
        coordinator.start()
        driver.start()
        testing.wait_until(
            lambda: (
                testing.end_offsets(backup.bootstrap_servers, remote, backup.client_config()).get(
                    0, 0
                )
                > 0
            ),
            300,
            "the driver copies into the remote topic",
            step=2,
            detail=logs,
        )
        testing.produce(
            primary.bootstrap_servers,
            topic,
            _records(FIRST, SECOND),
            config=primary.client_config(),
        )
        testing.wait_until(
            lambda: _caught_up(primary, backup, topic, remote),
            180,
            "the copy catches up",
            step=1,
            detail=logs,
        )
        time.sleep(3)  # a few metrics intervals and heartbeats on the target

        source = testing.consume_all(
            primary.bootstrap_servers, topic, client=primary.client_config()
        )
        target = testing.consume_all(
            backup.bootstrap_servers,
            remote,
            isolation_level="read_uncommitted",
            client=backup.client_config(),
        )
        count = testing.count_copy(source, target)
        print(f"\nsecured replication (SASL_SSL, SCRAM-SHA-512, StandardAuthorizer): {count}")
        assert count.produced == FIRST + SECOND
        assert (count.missing, count.duplicated) == (0, 0)
        for partition in range(PARTITIONS):
            assert testing.content(target[partition]) == testing.content(source[partition])

        # Every GET of the driver and the leading coordinator, as any caller sees them.
        state = testing.ControlGroup(config).state()
        assert state.leader is not None
        bases = {"driver": state.drivers["d1"].url, "coordinator": state.leader.url}
        paths = {
            "driver": ["/v1/driver", "/v1/flows", "/v1/flows/primary/backup/status"],
            "coordinator": ["/v1/leader", "/v1/state", "/v1/drivers"],
        }
        paths["driver"].append("/v1/flows/primary/backup/tasks")
        for service, base in bases.items():
            for path in [*paths[service], "/metrics"]:
                status, body = _get(base + path)
                if status == 200:
                    answers[f"GET {service}{path}"] = body
        for args in (
            ("topics", "--source", "primary", "--target", "backup", "--list"),
            ("audit",),
            ("acls", "--print"),
        ):
            done = _srm_control(config, *args)
            assert done.returncode == 0, f"srm-control {args}: {done.stderr}"
            control_outputs[" ".join(args)] = done.stdout + done.stderr
    finally:
        driver.stop()
        coordinator.stop()

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
    hits = {where: text.count(secret.encode()) for where, text in places.items()}
    leaked = {where: n for where, n in hits.items() if n}
    topics = [p for p in places if p.startswith("topic ")]
    print(
        f"secret grep: {sum(hits.values())} hits in {len(places)} places searched"
        f" ({sum(p.startswith('file ') for p in places)} files of process output,"
        f" {len(answers)} REST answers, {len(control_outputs)} srm-control outputs,"
        " make up's plan and summary,"
        f" {len(topics)} topics: {', '.join(sorted(topics))})"
    )
    assert f"topic primary:{prefix}.events.internal" in places, "the event log was searched"
    assert "topic backup:srm-metrics-raw.internal" in places, "raw metrics were searched"
    assert len(answers) >= 7, answers.keys()
    assert not leaked, f"the password appears in: {leaked}"
    # What the services complained about under least privilege (for the record).
    for process in (coordinator, driver):
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
    assert "Traceback" not in coordinator.log_text() + driver.log_text()
