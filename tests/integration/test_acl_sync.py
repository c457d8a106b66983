"""ACL sync between real clusters with StandardAuthorizer (SASL_SSL, SCRAM): what MM2's
rule copies from ``primary`` to ``backup``, and what a user can then do on the copy.

The job runs as an SRM user that holds exactly the ACLs ``srm-control acls --print``
lists for it (:func:`srm_common.required_acls.required_acls`), not as a super user.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)
from srm_common.adapters import kafka_clients
from srm_common.config import parse_yaml_text
from srm_common.config.model import FlowConfig
from srm_common.domain.acls import AclBinding
from srm_common.required_acls import required_acls
from srm_driver.acl_sync import AclSync, AclSyncJob, AclSyncProblem, from_kafka, to_kafka

pytestmark = pytest.mark.integration


def _yaml(clusters: dict[str, dict[str, str]], flow: str) -> str:
    lines = ["clusters:"]
    for alias, keys in clusters.items():
        lines.append(f"  {alias}:")
        lines += [f"    {key}: {value!r}" for key, value in keys.items()]
    return "\n".join([*lines, "flows:", f"  primary->backup: {flow}", ""])


def _acls(cluster, admin=None) -> list[AclBinding]:  # type: ignore[no-untyped-def]
    everything = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    client = admin or cluster.admin_client()
    found = client.describe_acls(everything).result(30)
    return sorted(b for b in (from_kafka(k) for k in found) if b is not None)


def _grant(cluster, bindings: list[AclBinding]) -> None:  # type: ignore[no-untyped-def]
    client = cluster.admin_client()
    for future in client.create_acls([to_kafka(b) for b in bindings]).values():
        future.result(30)


def _read(
    config: dict[str, str], topic: str, group: str, timeout: float = 15
) -> tuple[list[bytes], str | None]:
    """Values of partition 0 from its start (assigned, nothing committed), or the error."""
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not values:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                return values, message.error().name()
            values.append(message.value())
    finally:
        consumer.close()
    return values, None


def _write(config: dict[str, str], topic: str) -> str | None:
    """Produce one record; the delivery error's name, or None when it was written."""
    outcome: list[str | None] = []
    producer = Producer({**config, "message.timeout.ms": 15000})
    producer.produce(
        topic,
        b"from-alice",
        on_delivery=lambda err, _m: outcome.append(err.name() if err else None),
    )
    producer.flush(20)
    return outcome[0] if outcome else "NO_ANSWER"


def _wait(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_a_reader_of_orders_on_primary_can_read_the_copy_on_backup_and_never_write_it(
    kafka_secured, unique_name
) -> None:  # type: ignore[no-untyped-def]
    primary, backup = kafka_secured["primary"], kafka_secured["backup"]
    token = uuid.uuid4().hex[:6]
    orders = kafka_secured.create_topic("primary", unique_name("orders"))
    payments = kafka_secured.create_topic("primary", unique_name("payments"))
    remote_orders = kafka_secured.create_topic("backup", f"primary.{orders}")
    srm = {
        alias: c.create_user(f"srm-{token}", "srm-pw")
        for alias, c in (("primary", primary), ("backup", backup))
    }
    alice = {c.alias: c.create_user(f"alice-{token}", "alice-pw") for c in (primary, backup)}
    mallory = {c.alias: c.create_user(f"mallory-{token}", "mallory-pw") for c in (primary, backup)}
    a, m, carol = alice["primary"].principal, mallory["primary"].principal, f"User:carol-{token}"

    def acl(
        name: str, principal: str, operation: str, permission: str = "ALLOW", **kw: str
    ) -> AclBinding:
        return AclBinding(
            kw.get("resource", "TOPIC"), name, kw.get("pattern", "LITERAL"),  # type: ignore[arg-type]
            principal, "*", operation, permission,  # type: ignore[arg-type]
        )  # fmt: skip

    on_primary = [
        acl(orders, a, "READ"),
        acl(orders, a, "WRITE"),  # never copied
        acl(orders, carol, "ALL"),  # becomes READ
        acl(orders, m, "READ"),
        acl(orders, m, "READ", "DENY"),  # copied: the copy is not more open than the source
        acl(payments, a, "ALL"),  # becomes READ
        acl(orders[:8], a, "READ", pattern="PREFIXED"),  # PREFIXED: not copied
        acl(f"app-{token}", a, "READ", resource="GROUP"),  # not a topic: not copied
    ]
    _grant(primary, on_primary)

    keys = {
        alias: c.mm2_keys(srm[alias]) for alias, c in (("primary", primary), ("backup", backup))
    }
    flow_body = (
        f"{{enabled: true, topics: [{orders}, {payments}], sync.topic.acls.interval.seconds: 1}}"
    )
    config = parse_yaml_text(_yaml(keys, flow_body))
    flow: FlowConfig = config.flow("primary", "backup")
    # SRM's principal holds exactly what srm-control acls --print lists for it (driver rows).
    needed = [r for r in required_acls(config) if r.service == "driver"]
    for alias, cluster in (("primary", primary), ("backup", backup)):
        _grant(cluster, [r.binding for r in needed if r.cluster == alias])
    print(f"\nSRM's driver ACLs granted: {len(needed)} bindings from required_acls(config)")

    source_admin, target_admin = (
        kafka_clients.admin(flow.source_admin),
        kafka_clients.admin(flow.target_admin),
    )
    stop = threading.Event()
    job = AclSyncJob(flow, stop, AclSync(flow, source_admin, target_admin, timeout=15))
    job.start()
    try:
        _wait(lambda: job.status.state == "ok" and job.status.created_total >= 5, 60,
              f"ACL sync did not copy the ACLs: {job.status.as_dict()}")  # fmt: skip
        first = job.status.created_total
        time.sleep(2.5)  # two more rounds: nothing new to create
        assert job.status.state == "ok" and job.status.created_total == first, job.status.as_dict()
    finally:
        stop.set()
        job.join(20)

    remote = {f"primary.{orders}", f"primary.{payments}"}
    mine = {a, m, carol}
    print("ACLs on primary (topic and group ACLs of this test's principals):")
    for b in _acls(primary):
        if b.principal in mine:
            print("   ", b.describe())
    # SRM's own ACLs on the source topics are topic ACLs too, copied like any other; the
    # comparison is about this test's users.
    copied = [b for b in _acls(backup) if b.name in remote and b.principal in mine]
    print("ACLs on backup for the remote topics, after ACL sync:")
    for b in copied:
        print("   ", b.describe())
    assert copied == sorted(
        [
            acl(f"primary.{orders}", a, "READ"),
            acl(f"primary.{orders}", carol, "READ"),
            acl(f"primary.{orders}", m, "READ"),
            acl(f"primary.{orders}", m, "READ", "DENY"),
            acl(f"primary.{payments}", a, "READ"),
        ]
    ), "MM2's rule: no WRITE, ALL -> READ, DENY kept, PREFIXED and group ACLs left"
    assert job.status.skipped >= 3

    # What was copied, used: alice reads the copy and cannot write it; mallory's DENY holds.
    admin_producer = Producer(backup.client_config())
    admin_producer.produce(remote_orders, b"copied-record")  # the copy's stand-in
    admin_producer.flush(20)
    # Group ACLs are not copied (MM2 does not either): the operator grants alice's group.
    group = f"app-{token}"
    _grant(
        backup, [acl(group, a, "READ", resource="GROUP"), acl(group, m, "READ", resource="GROUP")]
    )
    values, error = _read(backup.client_config(alice["backup"]), remote_orders, group)
    print(f"alice reads backup:{remote_orders}: {values[:1]} error={error}")
    assert error is None and values[:1] == [b"copied-record"], "alice may read the copy"
    refused = _write(backup.client_config(alice["backup"]), remote_orders)
    print(f"alice writes backup:{remote_orders}: {refused}")
    assert refused == "TOPIC_AUTHORIZATION_FAILED", "nobody but SRM writes a remote topic"
    values, error = _read(backup.client_config(mallory["backup"]), remote_orders, group, 10)
    print(f"mallory reads backup:{remote_orders}: error={error}")
    assert error == "TOPIC_AUTHORIZATION_FAILED" and not values, "the copied DENY holds"


def test_without_describe_on_the_cluster_acl_sync_says_what_to_grant(
    kafka_secured,
) -> None:  # type: ignore[no-untyped-def]
    primary, backup = kafka_secured["primary"], kafka_secured["backup"]
    token = uuid.uuid4().hex[:6]
    nobody = {c.alias: c.create_user(f"norights-{token}", "pw") for c in (primary, backup)}
    keys = {
        alias: c.mm2_keys(nobody[alias]) for alias, c in (("primary", primary), ("backup", backup))
    }
    flow = parse_yaml_text(_yaml(keys, "{enabled: true}")).flow("primary", "backup")
    sync = AclSync(
        flow,
        kafka_clients.admin(flow.source_admin),
        kafka_clients.admin(flow.target_admin),
        timeout=10,
    )
    with pytest.raises(AclSyncProblem) as caught:
        sync.run_once()
    print(f"\n{caught.value.state}: {caught.value}")
    assert caught.value.state == "not-authorized"
    assert "lacks DESCRIBE on the cluster" in str(caught.value) and "'primary'" in str(caught.value)


def test_a_cluster_without_an_authorizer_is_said_once_and_nothing_fails(kafka, caplog) -> None:  # type: ignore[no-untyped-def]
    config = parse_yaml_text(
        _yaml(
            {
                "primary": {"bootstrap.servers": kafka["primary"]},
                "backup": {"bootstrap.servers": kafka["backup"]},
            },
            "{enabled: true}",
        )
    )
    flow = config.flow("primary", "backup")
    sync = AclSync(
        flow,
        kafka_clients.admin(flow.source_admin),
        kafka_clients.admin(flow.target_admin),
        timeout=10,
    )
    job = AclSyncJob(flow, threading.Event(), sync)
    job.round()
    job.round()
    print(f"\n{job.status.state}: {job.status.problem}")
    assert job.status.state == "no-authorizer"
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and "has no authorizer" in warned[0], warned
    assert "sync.topic.acls.enabled = false" in warned[0]


@pytest.mark.spark
def test_the_driver_runs_acl_sync_and_shows_it_on_the_flow_status(
    kafka, run_driver, tmp_path, unique_name
) -> None:  # type: ignore[no-untyped-def]
    """A standalone driver built by its composition root: the flow's REST status carries
    the ACL sync job's state; against brokers without an authorizer it says so and the
    copy goes on."""
    from srm_harness.clients import produce
    from srm_harness.control import write_config
    from srm_harness.records import Record
    from srm_harness.waits import wait_until

    topic = kafka.create_topic("primary", unique_name("orders"))
    kafka.created.append(("backup", f"primary.{topic}"))
    produce(
        kafka["primary"],
        topic,
        [Record(f"k{i}".encode(), b"v", (), None, 0) for i in range(5)],
    )
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {
                "enabled": True,
                "topics": [topic],
                "sync.topic.acls.interval.seconds": 1,
            },
            "backup->primary": {"enabled": False},
        },
    )
    driver = run_driver(config)
    wait_until(
        lambda: (driver.status().get("acl_sync") or {}).get("state") == "no-authorizer",
        90,
        "the ACL sync job reports the missing authorizer on the flow's status",
    )
    wait_until(
        lambda: driver.status()["copy"]["records"] >= 5, 90, "the copy goes on without ACL sync"
    )
    status = driver.status()["acl_sync"]
    print(f"\nacl_sync on GET /v1/flows/primary/backup/status: {status}")
    assert "sync.topic.acls.enabled = false" in status["problem"]
