"""The least-privilege ACLs printed by ``srm-control acls --print``, from a configuration."""

from __future__ import annotations

from srm_common.acl_render import acl_table, kafka_acls_commands
from srm_common.config import parse_properties_text
from srm_common.config.model import SrmConfig
from srm_common.required_acls import RequiredAcl, principal_of, required_acls
from srm_common.required_acls_grant import topic_resources

SCRAM = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="srm-{a}"'
    ' password="x";'
)


def config(extra: str = "") -> SrmConfig:
    text = "clusters = primary, backup\n"
    for alias, port in (("primary", 1), ("backup", 2)):
        text += (
            f"{alias}.bootstrap.servers = h:{port}\n{alias}.security.protocol = SASL_SSL\n"
            f"{alias}.sasl.mechanism = SCRAM-SHA-512\n"
            f"{alias}.sasl.jaas.config = {SCRAM.format(a=alias)}\n"
        )
    return parse_properties_text(text + "primary->backup.enabled = true\n" + extra)


def ops(rows: list[RequiredAcl], cluster: str, service: str, resource: str, name: str) -> set[str]:
    return {
        r.binding.operation
        for r in rows
        if (r.cluster, r.service, r.binding.resource_type, r.binding.name)
        == (cluster, service, resource, name)
    }


def test_principals_come_from_each_clusters_login() -> None:
    c = config()
    assert principal_of(c, "primary") == "User:srm-primary"
    rows = required_acls(c)
    assert {r.binding.principal for r in rows if r.cluster == "backup"} == {"User:srm-backup"}


def test_a_given_principal_wins_and_one_for_a_service_wins_over_the_clusters() -> None:
    rows = required_acls(config(), {"primary": "User:p", "coordinator@primary": "User:coordinator"})
    by_service = {(r.cluster, r.service): r.binding.principal for r in rows}
    assert by_service[("primary", "driver")] == "User:p"
    assert by_service[("primary", "coordinator")] == "User:coordinator"


def test_the_source_is_read_never_written_by_the_copy() -> None:
    rows = required_acls(config("primary->backup.topics = orders, sales\\\\..*\n"))
    assert ops(rows, "primary", "driver", "TOPIC", "orders") == {
        "READ",
        "DESCRIBE",
        "DESCRIBE_CONFIGS",
    }
    [sales] = [r for r in rows if r.binding.name == "sales." and r.cluster == "primary"][:1]
    assert sales.binding.pattern_type == "PREFIXED"
    written = {
        r.binding.name
        for r in rows
        if r.cluster == "primary" and r.service == "driver" and r.binding.operation == "WRITE"
    }
    assert "mm2-offset-syncs.backup.internal" in written
    assert not written & {"orders", "sales.", "*"}, "the copy never writes replicated topics"


def test_remote_topics_are_one_prefix_under_the_default_policy_and_names_under_identity() -> None:
    rows = required_acls(config("primary->backup.topics = orders\n"))
    remote = [r for r in rows if r.cluster == "backup" and r.binding.name == "primary."]
    assert {r.binding.pattern_type for r in remote} == {"PREFIXED"}
    assert {r.binding.operation for r in remote} >= {"CREATE", "WRITE", "ALTER", "ALTER_CONFIGS"}
    identity = required_acls(
        config(
            "primary->backup.topics = orders\n"
            "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
        )
    )
    assert "WRITE" in ops(identity, "backup", "driver", "TOPIC", "orders")
    assert not [
        r
        for r in identity
        if r.binding.pattern_type == "PREFIXED"
        and r.service == "driver"
        and r.binding.resource_type == "TOPIC"  # no remote-topic prefix under identity
    ]


def test_every_internal_topic_of_the_flow_is_granted_on_its_cluster() -> None:
    rows = required_acls(config())
    for name in (
        "heartbeats",
        "primary.checkpoints.internal",
        "mm2-offsets.primary.internal",
        "srm-metrics-raw.internal",
    ):
        assert {"CREATE", "WRITE"} <= ops(rows, "backup", "driver", "TOPIC", name), name
    assert "READ" in ops(rows, "backup", "driver", "TOPIC", "srm-control.log.internal")
    assert "WRITE" in ops(rows, "backup", "driver", "TOPIC", "srm-control.beats.internal")
    assert "WRITE" in ops(rows, "backup", "coordinator", "TOPIC", "srm-control.log.internal")
    assert "IDEMPOTENT_WRITE" in ops(rows, "backup", "driver", "CLUSTER", "kafka-cluster")


def test_offset_syncs_at_the_target_move_to_the_target() -> None:
    rows = required_acls(config("offset-syncs.topic.location = target\n"))
    assert "WRITE" in ops(rows, "backup", "driver", "TOPIC", "mm2-offset-syncs.primary.internal")
    assert not ops(rows, "primary", "driver", "TOPIC", "mm2-offset-syncs.backup.internal")


def test_acl_sync_needs_describe_on_the_source_and_alter_on_the_target_only_when_on() -> None:
    rows = required_acls(config())
    assert ops(rows, "primary", "driver", "CLUSTER", "kafka-cluster") >= {"DESCRIBE"}
    assert ops(rows, "backup", "driver", "CLUSTER", "kafka-cluster") >= {"DESCRIBE", "ALTER"}
    off = required_acls(config("sync.topic.acls.enabled = false\n"))
    assert "ALTER" not in ops(off, "backup", "driver", "CLUSTER", "kafka-cluster")
    assert "DESCRIBE" not in ops(off, "primary", "driver", "CLUSTER", "kafka-cluster")


def test_each_target_holds_its_log_its_transactional_id_and_its_election_group() -> None:
    rows = required_acls(config("srm.control.cluster = backup\nsrm.control.topic.prefix = c1\n"))
    for alias in ("primary", "backup"):  # backup->primary beats: primary is a target too
        assert "WRITE" in ops(rows, alias, "coordinator", "TOPIC", "c1.log.internal")
        assert ops(rows, alias, "driver", "TOPIC", "c1.log.internal") == {"READ", "DESCRIBE"}
        assert ops(rows, alias, "api-gateway", "TOPIC", "c1.log.internal") == {"READ", "DESCRIBE"}
        assert ops(rows, alias, "coordinator", "TRANSACTIONAL_ID", "c1.log-leader") == {
            "WRITE",
            "DESCRIBE",
        }
        assert ops(rows, alias, "coordinator", "GROUP", "c1.leaders") == {"READ", "DESCRIBE"}
    # The single log of an earlier release, on srm.control.cluster: read and marked once.
    assert ops(rows, "backup", "coordinator", "TOPIC", "c1.events.internal") == {
        "READ",
        "WRITE",
        "DESCRIBE",
    }
    assert not ops(rows, "backup", "driver", "TOPIC", "c1.events.internal")
    assert not [r for r in rows if r.cluster == "primary" and "c1.events" in r.binding.name]


def test_only_the_coordinator_may_write_the_event_log() -> None:
    rows = required_acls(config())
    writers = {
        r.service
        for r in rows
        if r.binding.name == "srm-control.events.internal" and r.binding.operation == "WRITE"
    }
    assert writers == {"coordinator"}


def test_the_aggregator_and_gateway_get_their_topics_on_each_target() -> None:
    rows = required_acls(config("srm.metrics.aggregator.id = agg1\n"))
    assert "READ" in ops(rows, "backup", "metrics-aggregator", "TOPIC", "srm-metrics-raw.internal")
    assert "READ" in ops(rows, "backup", "metrics-aggregator", "GROUP", "agg1")
    assert "WRITE" in ops(rows, "backup", "metrics-aggregator", "TOPIC", "agg1")
    assert ops(rows, "backup", "api-gateway", "TOPIC", "srm-metrics-aggregated.internal") == {
        "READ",
        "DESCRIBE",
    }


def test_patterns_become_literal_prefixed_or_the_wildcard_with_a_note() -> None:
    assert topic_resources(
        ["orders", "billing\\.eu", "sales\\..*", "a-.*", ".*", "a|b", "x.y.*"]
    ) == [
        ("orders", "LITERAL", None),
        ("billing.eu", "LITERAL", None),
        ("sales.", "PREFIXED", None),
        ("a-", "PREFIXED", None),
        ("*", "LITERAL", None),
        ("*", "LITERAL", "pattern 'a|b' has no exact ACL form"),
        ("*", "LITERAL", "pattern 'x.y.*' has no exact ACL form"),
    ]


def test_an_ssl_principal_is_a_placeholder_until_given() -> None:
    c = parse_properties_text(
        "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\n"
        "a.security.protocol = SSL\na->b.enabled = true\n"
    )
    assert principal_of(c, "a") is None
    rows = required_acls(c)
    assert {r.binding.principal for r in rows if r.cluster == "a"} == {"User:<principal of a>"}
    assert {r.binding.principal for r in rows if r.cluster == "b"} == {"User:ANONYMOUS"}


def test_commands_group_operations_per_resource_and_quote_the_wildcard() -> None:
    c = config("primary->backup.topics = orders\n")
    text = kafka_acls_commands(c, required_acls(c))
    assert (
        "kafka-acls.sh --bootstrap-server h:1 --command-config primary-admin.properties --add"
        " --allow-principal User:srm-primary --operation Describe --operation DescribeConfigs"
        " --operation Read --topic orders"
    ) in text
    assert "--topic primary. --resource-pattern-type prefixed" in text
    assert "--operation Write --transactional-id srm-control.coordinator" in text
    assert "--group '*'" in text
    table = acl_table(required_acls(c))
    assert table.splitlines()[0].split() == [
        "CLUSTER",
        "SERVICE",
        "PRINCIPAL",
        "RESOURCE",
        "OPERATIONS",
    ]


def test_the_consumers_groups_are_described_even_when_the_flows_name_their_groups() -> None:
    # librdkafka consumers look their group up (FindCoordinator) though they commit
    # nothing; with `groups` a literal list no GROUP:* covers them by chance.
    rows = required_acls(config("primary->backup.groups = app\nsrm.control.topic.prefix = p\n"))
    prefixed = {
        (r.cluster, r.service, r.binding.name)
        for r in rows
        if r.binding.resource_type == "GROUP" and r.binding.pattern_type == "PREFIXED"
    }
    for service in ("coordinator", "driver", "api-gateway"):
        assert ("primary", service, "p.reader.") in prefixed
    assert ("primary", "coordinator", "p.beats.") in prefixed
    assert ("backup", "driver", "p.reader.") in prefixed
    for alias in ("primary", "backup"):
        assert ops(rows, alias, "driver", "GROUP", "srm-reader") == {"DESCRIBE"}
    assert ops(rows, "backup", "metrics-aggregator", "GROUP", "srm-reader") == {"DESCRIBE"}
    assert not [r for r in rows if r.binding.resource_type == "GROUP" and r.binding.name == "*"]


def test_a_flow_that_only_beats_still_writes_raw_metrics_to_its_target() -> None:
    rows = required_acls(config("backup->primary.enabled = false\n"))
    assert ops(rows, "primary", "driver", "TOPIC", "srm-metrics-raw.internal") == {
        "CREATE",
        "WRITE",
        "DESCRIBE",
    }
