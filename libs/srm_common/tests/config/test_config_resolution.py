"""MM2 defaults, precedence per flow, client-config layering, legacy aliases, pass-through."""

from __future__ import annotations

import dataclasses

from srm_common.config import FlowConfig, SrmConfig, parse_properties_text
from srm_common.config.keys import CONNECTOR_KEYS
from srm_common.domain.filters import GroupFilter, TopicFilter

HEADER = """\
clusters = primary, backup
primary.bootstrap.servers = 127.0.0.1:9092
backup.bootstrap.servers = 127.0.0.1:9192
"""


def load(body: str = "", header: str = HEADER) -> SrmConfig:
    return parse_properties_text(header + body, source="mm2.properties")


def primary_to_backup(body: str = "") -> FlowConfig:
    return load(body).flow("primary", "backup")


def test_mm2_defaults_apply_when_nothing_is_set() -> None:
    flow = primary_to_backup()
    assert flow.enabled is False, "flows are off unless enabled"
    assert flow.topics == (".*",) and flow.groups == (".*",)
    assert flow.topics_exclude == (r".*[\-\.]internal", r".*\.replica", "__.*")
    assert flow.groups_exclude == ("console-consumer-.*", "connect-.*", "__.*")
    assert "min\\.insync\\.replicas" in flow.config_properties_exclude
    assert (flow.tasks_max, flow.replication_factor) == (1, 2)
    assert flow.replication_policy_class.endswith("DefaultReplicationPolicy")
    assert (flow.replication_policy_separator, flow.internal_topic_separator_enabled) == (".", True)
    assert flow.heartbeats_replication_enabled is True
    assert (flow.emit_heartbeats_enabled, flow.emit_heartbeats_interval_seconds) == (True, 1)
    assert (flow.emit_checkpoints_enabled, flow.emit_checkpoints_interval_seconds) == (True, 60)
    assert (flow.sync_group_offsets_enabled, flow.sync_group_offsets_interval_seconds) == (
        False,
        60,
    )
    assert (flow.refresh_topics_enabled, flow.refresh_topics_interval_seconds) == (True, 600)
    assert (flow.refresh_groups_enabled, flow.refresh_groups_interval_seconds) == (True, 600)
    assert (flow.sync_topic_configs_enabled, flow.sync_topic_configs_interval_seconds) == (
        True,
        600,
    )
    assert (flow.offset_lag_max, flow.offset_syncs_topic_location) == (100, "source")
    assert (
        flow.heartbeats_topic_replication_factor,
        flow.checkpoints_topic_replication_factor,
        flow.offset_syncs_topic_replication_factor,
    ) == (3, 3, 3)
    assert dict(flow.extra) == {}


def test_every_catalogue_field_is_a_flow_field_when_the_model_is_built() -> None:
    model_fields = {f.name for f in dataclasses.fields(FlowConfig)}
    catalogue_fields = {spec.field for spec in CONNECTOR_KEYS.values() if spec.field}
    assert catalogue_fields <= model_fields
    unfilled = model_fields - catalogue_fields - {"source", "target", "extra", "written"}
    assert all(name.startswith(("source_", "target_")) for name in unfilled), unfilled


def test_every_ordered_pair_has_a_flow_when_three_clusters_are_declared() -> None:
    config = load(
        "clusters = a, b, c\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\n"
        "c.bootstrap.servers = c:1\nb->c.enabled = true\n",
        header="",
    )
    assert list(config.flows) == [
        ("a", "b"),
        ("a", "c"),
        ("b", "a"),
        ("b", "c"),
        ("c", "a"),
        ("c", "b"),
    ]
    assert [f.name for f in config.enabled_flows()] == ["b->c"]
    assert config.aliases == ("a", "b", "c")


def test_flow_level_wins_when_top_level_and_flow_level_set_the_same_key() -> None:
    config = load(
        "tasks.max = 2\nprimary->backup.tasks.max = 4\nemit.checkpoints.enabled = FALSE\n"
    )
    assert config.flow("primary", "backup").tasks_max == 4
    assert config.flow("backup", "primary").tasks_max == 2, "top level applies to other flows"
    assert config.flow("backup", "primary").emit_checkpoints_enabled is False


def test_top_level_enabled_enables_every_flow_when_set_as_in_mm2() -> None:
    config = load("enabled = true\nbackup->primary.enabled = false\n")
    assert [f.name for f in config.enabled_flows()] == ["primary->backup"]


def test_filters_are_built_from_the_flow_when_asked() -> None:
    flow = primary_to_backup("primary->backup.topics = orders, payments-.*\ngroups = billing\n")
    assert flow.topic_filter() == TopicFilter(("orders", "payments-.*"), flow.topics_exclude)
    assert flow.topic_filter().matches("payments-eu")
    assert not flow.topic_filter().matches("audit")
    assert flow.group_filter() == GroupFilter(("billing",), flow.groups_exclude)
    assert not flow.config_property_filter().should_replicate("min.insync.replicas")


def test_empty_list_matches_nothing_when_topics_is_blank() -> None:
    flow = primary_to_backup("topics =\n")
    assert flow.topics == ()
    assert not flow.topic_filter().matches("orders")


def test_replication_policy_is_built_when_the_flow_asks_for_it() -> None:
    flow = primary_to_backup("replication.policy.separator = _\n")
    assert flow.replication_policy().format_remote_topic("primary", "orders") == "primary_orders"


def test_new_key_wins_when_legacy_and_new_exclude_keys_are_both_set() -> None:
    config = load("topics.blacklist = old\ntopics.exclude = new\ngroups.blacklist = g-old\n")
    flow = config.flow("primary", "backup")
    assert flow.topics_exclude == ("new",)
    assert flow.groups_exclude == ("g-old",), "a legacy key alone still counts"
    assert "key 'topics.blacklist' is deprecated (removed in Kafka 4.0); use 'topics.exclude'" in (
        config.warnings
    )


def test_a_legacy_config_properties_blacklist_excludes_configs_from_remote_topics() -> None:
    flow = primary_to_backup(r"config.properties.blacklist = retention\\.ms" + "\n")
    assert flow.config_properties_exclude == (r"retention\.ms",)
    assert not flow.config_property_filter().should_replicate("retention.ms")
    assert flow.config_property_filter().should_replicate("cleanup.policy")


def test_top_level_new_key_beats_flow_legacy_key_when_mm2_merges_levels_first() -> None:
    config = load("topics.exclude = top\nprimary->backup.topics.blacklist = flow\n")
    assert config.flow("primary", "backup").topics_exclude == ("top",)
    assert any("is ignored for primary->backup" in w for w in config.warnings)


def test_last_value_wins_with_a_warning_when_a_key_is_repeated() -> None:
    config = load("tasks.max = 2\ntasks.max = 3\n")
    assert config.flow("primary", "backup").tasks_max == 3
    assert config.warnings == ("key 'tasks.max' is set 2 times (lines 4, 5); the last value wins",)


def test_cluster_connection_keys_reach_every_client_when_set_per_cluster() -> None:
    flow = primary_to_backup(
        "primary.security.protocol = SSL\nprimary.ssl.truststore.location = /p.jks\n"
        "security.protocol = SASL_SSL\nsasl.mechanism = PLAIN\n"
        "sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required"
        ' username="u" password="p";\n'
    )
    for client in (flow.source_consumer, flow.source_admin, flow.source_producer):
        assert client["security.protocol"] == "SSL", "the cluster's own key beats top level"
        assert client["ssl.truststore.location"] == "/p.jks"
        assert client["bootstrap.servers"] == "127.0.0.1:9092"
    for client in (flow.target_admin, flow.target_producer, flow.target_internal_producer):
        assert client["security.protocol"] == "SASL_SSL", "top level is the fallback"
        assert client["bootstrap.servers"] == "127.0.0.1:9192"


def test_client_layers_follow_mm2_when_a_consumer_key_is_set_at_every_level() -> None:
    body = (
        "consumer.a = top\nconsumer.b = top\nconsumer.c = top\nconsumer.d = top\n"
        "primary->backup.consumer.b = flow\nprimary->backup.consumer.c = flow\n"
        "primary->backup.consumer.d = flow\n"
        "primary.consumer.c = cluster\nprimary.consumer.d = cluster\n"
        "primary->backup.source.consumer.d = flow-source\n"
    )
    consumer = primary_to_backup(body).source_consumer
    assert [consumer[k] for k in "abcd"] == ["top", "flow", "cluster", "flow-source"]


def test_cluster_connection_beats_flow_client_key_when_mm2_copies_it_into_source_consumer() -> None:
    flow = primary_to_backup(
        "primary.security.protocol = SSL\nprimary->backup.consumer.security.protocol = PLAINTEXT\n"
    )
    assert flow.source_consumer["security.protocol"] == "SSL"


def test_consumer_safety_keys_are_set_when_a_source_consumer_is_built() -> None:
    flow = primary_to_backup(
        "primary.consumer.enable.auto.commit = true\nprimary.consumer.auto.offset.reset = latest\n"
    )
    assert flow.source_consumer["enable.auto.commit"] == "false", "forced, as in MM2"
    assert flow.source_consumer["auto.offset.reset"] == "latest", "kept when set"
    assert flow.target_consumer["auto.offset.reset"] == "earliest"


def test_data_producer_layers_follow_connect_when_producer_keys_are_set() -> None:
    flow = primary_to_backup(
        "backup.producer.linger.ms = 5\nbackup.producer.acks = 1\n"
        "primary->backup.producer.override.acks = all\nprimary->backup.producer.batch.size = 9\n"
    )
    producer = flow.target_producer
    assert producer["linger.ms"] == "5"
    assert producer["acks"] == "all", "S->T.producer.override.* beats T.producer.*"
    assert "batch.size" not in producer, "flow-level producer.* is for MM2's internal topics"
    assert flow.target_internal_producer["batch.size"] == "9"
    assert producer["max.in.flight.requests.per.connection"] == "1"
    assert producer["enable.idempotence"] == "true"


def test_cluster_overrides_are_kept_as_written_when_a_cluster_is_built() -> None:
    config = load(
        "primary.consumer.fetch.max.bytes = 52428800\nprimary.admin.request.timeout.ms = 5\n"
        "primary.offset.flush.timeout.ms = 10000\n"
    )
    primary = config.cluster("primary")
    assert primary.bootstrap_servers == ("127.0.0.1:9092",)
    assert dict(primary.consumer) == {"fetch.max.bytes": "52428800"}
    assert dict(primary.admin) == {"request.timeout.ms": "5"}
    assert dict(primary.extra) == {"offset.flush.timeout.ms": "10000"}
    assert primary.client_config("consumer") == {
        "bootstrap.servers": "127.0.0.1:9092",
        "fetch.max.bytes": "52428800",
    }


def test_unknown_keys_pass_through_in_extra_when_they_look_like_no_known_key() -> None:
    config = load(
        "offset.flush.timeout.ms = 10000\nprimary->backup.emit.offset-syncs.enabled = FALSE\n"
        "primary->backup.my.custom.thing = x\ndedicated.mode.enable.internal.rest = true\n"
    )
    flow = config.flow("primary", "backup")
    assert flow.extra["offset.flush.timeout.ms"] == "10000"
    assert flow.extra["emit.offset-syncs.enabled"] == "false", "known extras are validated"
    assert flow.sync_topic_acls_enabled and flow.sync_topic_acls_interval_seconds == 600
    assert flow.extra["my.custom.thing"] == "x"
    assert config.extra["dedicated.mode.enable.internal.rest"] == "true"
    assert "my.custom.thing" not in config.flow("backup", "primary").extra


def test_bootstrap_list_is_normalised_when_servers_have_spaces() -> None:
    config = load("primary.bootstrap.servers = a:1 ,  b:2\n")
    assert config.cluster("primary").bootstrap_servers == ("a:1", "b:2")
    assert config.cluster("primary").client["bootstrap.servers"] == "a:1,b:2"


def test_passwords_keep_trailing_spaces_when_other_values_are_trimmed() -> None:
    config = load("primary.ssl.key.password = secret  \nprimary.consumer.client.rack = r1  \n")
    assert config.cluster("primary").client["ssl.key.password"] == "secret  "
    assert config.cluster("primary").consumer["client.rack"] == "r1"


def test_connect_and_worker_keys_pass_through_when_they_are_not_typos() -> None:
    keys = (
        "offset.flush.timeout.ms offset.storage.replication.factor key.converter"
        " task.shutdown.graceful.timeout.ms listeners metrics.period group.id client.id"
        " exactly.once.source.support config.providers replication.policy.custom.option"
        " cloudera.reverse.checkpointing.enabled request.timeout.ms"
    ).split()
    config = load("".join(f"{key} = 1\n" for key in keys))
    assert sorted(config.extra) == sorted(keys)
    assert dict(config.flow("primary", "backup").extra) == dict.fromkeys(keys, "1")
