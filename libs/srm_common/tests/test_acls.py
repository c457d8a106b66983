"""Which source topic ACLs a flow copies to its target (MM2's syncTopicAcls rule)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from srm_common.config import parse_properties_text
from srm_common.domain.acls import OPERATIONS, AclBinding, missing_acls, plan_acl_copy
from srm_common.replication_plan import reason_not_replicated


def flow_rules(extra: str = "") -> tuple[object, object]:
    config = parse_properties_text(
        "clusters = primary, backup\nprimary.bootstrap.servers = p:1\n"
        "backup.bootstrap.servers = b:1\nprimary->backup.enabled = true\n" + extra
    )
    flow = config.flow("primary", "backup")
    policy = flow.replication_policy()
    return (
        lambda topic: reason_not_replicated(flow, policy, topic),
        lambda topic: policy.format_remote_topic(flow.source, topic),
    )


def topic_acl(
    name: str,
    operation: str = "READ",
    permission: str = "ALLOW",
    *,
    principal: str = "User:alice",
    pattern: str = "LITERAL",
    resource: str = "TOPIC",
) -> AclBinding:
    return AclBinding(resource, name, pattern, principal, "*", operation, permission)  # type: ignore[arg-type]


def plan(bindings: list[AclBinding], extra: str = ""):  # noqa: ANN201 - test helper
    reason, remote = flow_rules(extra)
    return plan_acl_copy(bindings, reason_not_replicated=reason, remote_topic=remote)  # type: ignore[arg-type]


def test_a_read_acl_is_copied_to_the_remote_topic_as_a_literal_binding() -> None:
    result = plan([topic_acl("orders")])
    assert result.wanted == (topic_acl("primary.orders"),)
    assert result.skipped == ()


def test_allow_all_is_downgraded_to_read_on_the_remote_topic() -> None:
    result = plan([topic_acl("orders", "ALL")])
    assert result.wanted == (topic_acl("primary.orders", "READ"),)


def test_allow_write_is_never_granted_on_a_remote_topic() -> None:
    result = plan([topic_acl("orders", "WRITE")])
    assert result.wanted == ()
    [skipped] = result.skipped
    assert "ALLOW WRITE is never granted" in skipped.reason


def test_deny_is_copied_as_it_is_so_the_copy_is_never_more_open_than_the_source() -> None:
    deny_read = topic_acl("orders", "READ", "DENY", principal="User:mallory")
    deny_write = topic_acl("orders", "WRITE", "DENY", principal="User:mallory")
    deny_all = topic_acl("orders", "ALL", "DENY", principal="User:mallory")
    result = plan([deny_read, deny_write, deny_all])
    assert result.wanted == tuple(
        sorted(
            [
                topic_acl("primary.orders", "READ", "DENY", principal="User:mallory"),
                topic_acl("primary.orders", "WRITE", "DENY", principal="User:mallory"),
                topic_acl("primary.orders", "ALL", "DENY", principal="User:mallory"),
            ]
        )
    ), "DENY ALL stays ALL: only ALLOW ALL is downgraded"


def test_prefixed_patterns_are_not_copied() -> None:
    result = plan([topic_acl("ord", pattern="PREFIXED")])
    assert result.wanted == ()
    assert "PREFIXED pattern" in result.skipped[0].reason


def test_the_wildcard_topic_is_not_copied_under_either_policy() -> None:
    identity = (
        "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
    )
    for extra in ("", identity):
        result = plan([topic_acl("*")], extra)
        assert result.wanted == (), "'*' would become every topic of the target (identity)"
        assert "wildcard" in result.skipped[0].reason


def test_acls_of_other_resources_are_not_copied() -> None:
    result = plan(
        [
            topic_acl("app", resource="GROUP"),
            topic_acl("kafka-cluster", "ALTER", resource="CLUSTER"),
        ]
    )
    assert result.wanted == ()
    assert all("only topic ACLs" in s.reason for s in result.skipped)


def test_only_topics_the_flow_replicates_are_copied() -> None:
    result = plan(
        [
            topic_acl("orders"),
            topic_acl("payments"),
            topic_acl("backup.orders"),  # came from the target: a cycle
            topic_acl("__consumer_offsets"),  # internal
            topic_acl("mm2-offset-syncs.backup.internal"),
        ],
        "primary->backup.topics = orders, backup.orders, __consumer_offsets\n",
    )
    assert result.wanted == (topic_acl("primary.orders"),)
    reasons = {s.binding.name: s.reason for s in result.skipped}
    assert reasons["payments"] == "topic not replicated: not in topics"
    assert "loop" in reasons["backup.orders"]
    assert reasons["__consumer_offsets"] == "topic not replicated: internal topic"


def test_identity_policy_copies_to_the_same_name() -> None:
    identity = (
        "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
    )
    result = plan([topic_acl("orders", "ALL")], identity)
    assert result.wanted == (topic_acl("orders", "READ"),)


def test_a_custom_separator_names_the_remote_topic() -> None:
    result = plan([topic_acl("orders")], "replication.policy.separator = _\n")
    assert result.wanted == (topic_acl("primary_orders"),)


def test_read_and_all_of_one_principal_give_one_target_binding() -> None:
    result = plan([topic_acl("orders", "READ"), topic_acl("orders", "ALL")])
    assert len(result.copies) == 2
    assert result.wanted == (topic_acl("primary.orders"),)


def test_principal_and_host_are_kept() -> None:
    source = AclBinding(
        "TOPIC", "orders", "LITERAL", "User:CN=svc,O=x", "10.0.0.5", "DESCRIBE", "ALLOW"
    )
    [target] = plan([source]).wanted
    assert (target.principal, target.host, target.operation) == (
        "User:CN=svc,O=x",
        "10.0.0.5",
        "DESCRIBE",
    )


def test_only_missing_bindings_are_created_and_nothing_is_removed() -> None:
    wanted = [topic_acl("primary.orders"), topic_acl("primary.orders", "DESCRIBE")]
    existing = [topic_acl("primary.orders"), topic_acl("primary.other")]
    assert missing_acls(wanted, existing) == (topic_acl("primary.orders", "DESCRIBE"),)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("operation", "READS", "unknown ACL operation"),
        ("principal", "alice", "has no type"),
        ("name", "", "empty"),
    ],
)
def test_a_malformed_binding_is_refused(field: str, value: str, message: str) -> None:
    values = {
        "resource_type": "TOPIC",
        "name": "orders",
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "READ",
        "permission": "ALLOW",
        field: value,
    }
    with pytest.raises(ValueError, match=message):
        AclBinding(**values)  # type: ignore[arg-type]


_bindings = st.builds(
    AclBinding,
    resource_type=st.sampled_from(["TOPIC", "GROUP", "CLUSTER"]),
    name=st.sampled_from(["orders", "payments", "*", "backup.orders", "x.internal", "ord"]),
    pattern_type=st.sampled_from(["LITERAL", "PREFIXED"]),
    principal=st.sampled_from(["User:alice", "User:*", "User:bob"]),
    host=st.sampled_from(["*", "10.0.0.1"]),
    operation=st.sampled_from(sorted(OPERATIONS)),
    permission=st.sampled_from(["ALLOW", "DENY"]),
)


@given(st.lists(_bindings, max_size=30))
def test_a_copy_never_grants_write_or_all_and_every_source_binding_is_accounted_for(
    bindings: list[AclBinding],
) -> None:
    result = plan(bindings)
    for target in result.wanted:
        assert target.resource_type == "TOPIC" and target.pattern_type == "LITERAL"
        assert target.name.startswith("primary."), "only remote topics get ACLs"
        if target.permission == "ALLOW":
            assert target.operation not in {"WRITE", "ALL"}, f"the copy grants {target}"
    assert len(result.copies) + len(result.skipped) == len(set(bindings))
