"""The replication plan `make up` prints: routes per flow and why topics are skipped."""

from __future__ import annotations

from srm_common.config import parse_yaml_text
from srm_common.replication_plan import (
    SkippedTopic,
    TopicRoute,
    plan_replication,
    render_plan,
)

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9092"}
  backup: {bootstrap.servers: "127.0.0.1:9192"}
  dr: {bootstrap.servers: "127.0.0.1:9292"}
replication:
  topics: [".*"]
  topics.exclude: [".*[\\\\-\\\\.]internal", ".*\\\\.replica", "__.*", "secret-.*"]
flows:
  primary->backup: {enabled: true}
  backup->primary: {enabled: true}
  backup->dr: {enabled: true, topics: "primary\\\\..*"}
"""

PRIMARY_TOPICS = {
    "orders",
    "secret-keys",
    "__consumer_offsets",
    "heartbeats",
    "mm2-offsets.backup.internal",
    "backup.orders",
}
BACKUP_TOPICS = {"primary.orders", "payments", "heartbeats", "primary.heartbeats"}


def _plans():
    config = parse_yaml_text(CONFIG, "srm.yaml")
    plans = plan_replication(config, {"primary": PRIMARY_TOPICS, "backup": BACKUP_TOPICS})
    return {plan.name: plan for plan in plans}


def test_flow_copies_allowed_topics_under_prefixed_names_when_enabled():
    plan = _plans()["primary->backup"]
    assert plan.routes == (
        TopicRoute("heartbeats", "primary.heartbeats"),
        TopicRoute("orders", "primary.orders"),
    ), f"unexpected routes {plan.routes}"


def test_flow_explains_each_skipped_topic_when_not_copied():
    skipped = {s.topic: s.reason for s in _plans()["primary->backup"].skipped}
    assert skipped == {
        "__consumer_offsets": "internal topic",
        "mm2-offsets.backup.internal": "internal topic",
        "backup.orders": "came from backup: copying it back would loop",
        "secret-keys": "excluded by topics.exclude",
    }, skipped


def test_remote_topics_never_go_back_when_flows_are_bidirectional():
    plan = _plans()["backup->primary"]
    remote = {route.topic: route.remote_topic for route in plan.routes}
    assert "primary.orders" not in remote and "primary.heartbeats" not in remote, remote
    assert remote == {"payments": "backup.payments", "heartbeats": "backup.heartbeats"}


def test_chain_accumulates_prefixes_when_three_clusters_are_chained():
    plan = _plans()["backup->dr"]
    remote = {route.topic: route.remote_topic for route in plan.routes}
    assert remote["primary.orders"] == "backup.primary.orders", remote
    assert SkippedTopic("payments", "not in topics") in plan.skipped


def test_plan_says_unknown_and_disabled_when_a_cluster_is_unreachable_or_a_flow_is_off():
    plans = _plans()
    assert not plans["dr->primary"].enabled and plans["dr->primary"].routes == ()
    text = render_plan(plans.values())
    assert "dr->primary: disabled (heartbeats only)" in text, text
    assert "primary->backup: enabled, 2 topics to replicate" in text, text
    assert "orders      ->  backup:primary.orders" in text, text
    assert (
        "    topics allowed: .*  (change: srm-control topics --source primary --target backup"
        " --add/--remove 'PATTERN')"
    ) in text, text
    # dr's topics were not listed (unreachable): enabled flows from dr would say unknown.
    config = parse_yaml_text(CONFIG.replace("backup->dr", "dr->backup"), "srm.yaml")
    dr_plan = {p.name: p for p in plan_replication(config, {})}["dr->backup"]
    assert dr_plan.enabled and not dr_plan.source_known and dr_plan.routes == ()


def test_plan_says_how_to_allow_topics_when_a_yaml_flow_sets_none():
    config = parse_yaml_text(CONFIG.replace('  topics: [".*"]\n', ""), "srm.yaml")
    plans = {p.name: p for p in plan_replication(config, {"primary": PRIMARY_TOPICS})}
    plan = plans["primary->backup"]
    assert plan.allowed == () and plan.routes == (TopicRoute("heartbeats", "primary.heartbeats"),)
    assert SkippedTopic("orders", "not in topics") in plan.skipped
    text = render_plan([plan])
    assert (
        "    topics allowed: none yet (allow some: srm-control topics --source primary"
        " --target backup --add 'PATTERN')"
    ) in text, text
