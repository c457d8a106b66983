"""srm.yaml: sections, lists versus comma strings, nesting, values as written."""

from __future__ import annotations

from textwrap import dedent

from srm_common.config import SrmConfig, parse_properties_text, parse_yaml_text

CLUSTERS = """\
clusters:
  primary:
    bootstrap.servers: 127.0.0.1:9092
  backup:
    bootstrap.servers: 127.0.0.1:9192
"""


def load(text: str) -> SrmConfig:
    return parse_yaml_text(CLUSTERS + dedent(text), source="srm.yaml")


def test_yaml_list_equals_comma_string_when_both_list_the_same_patterns() -> None:
    as_list = load("replication:\n  topics: [orders, 'payments-.*']\n")
    as_string = load("replication:\n  topics: orders, payments-.*\n")
    assert as_list.flows == as_string.flows
    assert as_list.flow("primary", "backup").topics == ("orders", "payments-.*")


def test_list_item_keeps_its_comma_when_a_yaml_list_holds_a_regex_with_one() -> None:
    config = load("flows:\n  primary->backup:\n    topics: ['log-[0-9]{1,3}']\n")
    assert config.flow("primary", "backup").topics == ("log-[0-9]{1,3}",)


def test_nested_mappings_join_with_dots_when_keys_are_grouped() -> None:
    config = load(
        """\
        replication:
          sync:
            group.offsets:
              enabled: true
        flows:
          primary->backup:
            consumer:
              fetch.max.bytes: 1024
        """
    )
    assert config.flow("primary", "backup").sync_group_offsets_enabled is True
    assert config.flow("primary", "backup").source_consumer["fetch.max.bytes"] == "1024"


def test_cluster_keys_are_alias_keys_when_written_under_clusters() -> None:
    config = parse_yaml_text(
        dedent(
            """\
            clusters:
              primary:
                bootstrap.servers: [a:1, b:2]
                security.protocol: SSL
                consumer: {fetch.max.bytes: 7}
              backup:
                bootstrap.servers: c:3
            """
        )
    )
    primary = config.cluster("primary")
    assert primary.bootstrap_servers == ("a:1", "b:2")
    assert primary.client["security.protocol"] == "SSL"
    assert dict(primary.consumer) == {"fetch.max.bytes": "7"}


def test_spaces_around_the_arrow_are_ignored_when_a_flow_is_named() -> None:
    config = load("flows:\n  primary -> backup:\n    enabled: true\n")
    assert [f.name for f in config.enabled_flows()] == ["primary->backup"]


def test_quoted_true_is_a_boolean_when_written_as_text() -> None:
    config = load("flows:\n  primary->backup: {enabled: 'TRUE'}\n")
    assert config.flow("primary", "backup").enabled is True


def test_empty_value_is_an_empty_list_when_topics_is_blank() -> None:
    config = load("replication:\n  topics:\n")
    assert config.flow("primary", "backup").topics == ()


def test_yaml_and_properties_load_equal_when_they_say_the_same() -> None:
    yaml_config = load(
        """\
        replication:
          tasks.max: 3
          topics: [".*"]
          topics.exclude: [".*-internal"]
          consumer.fetch.min.bytes: 5
        flows:
          primary->backup:
            enabled: true
            producer.override.linger.ms: 10
        """
    )
    props_config = parse_properties_text(
        "clusters = primary, backup\nprimary.bootstrap.servers = 127.0.0.1:9092\n"
        "backup.bootstrap.servers = 127.0.0.1:9192\ntasks.max = 3\ntopics = .*\n"
        "topics.exclude = .*-internal\nconsumer.fetch.min.bytes = 5\n"
        "primary->backup.enabled = true\nprimary->backup.producer.override.linger.ms = 10\n"
    )
    assert yaml_config.clusters == props_config.clusters
    assert yaml_config.flows == props_config.flows


def test_last_value_wins_with_a_warning_when_a_yaml_key_is_repeated() -> None:
    config = load("replication:\n  tasks.max: 2\n  tasks.max: 5\n")
    assert config.flow("primary", "backup").tasks_max == 5
    assert config.warnings == (
        "key 'replication.tasks.max' is set 2 times (lines 7, 8); the last value wins",
    )


def test_flow_allows_no_topics_when_srm_yaml_sets_none() -> None:
    # SRM's default: an enabled flow replicates nothing until srm-control allows topics.
    config = load("flows:\n  primary->backup:\n    enabled: true\n")
    flow = config.flow("primary", "backup")
    assert flow.topics == () and not flow.topic_filter().matches("orders")
    assert config.flow("backup", "primary").topics == ()


def test_written_topics_win_over_srm_default_when_set_at_either_level() -> None:
    top = load("replication:\n  topics: [orders]\n")
    assert top.flow("primary", "backup").topics == ("orders",)
    flow = load("replication:\n  topics: [orders]\nflows:\n  backup->primary: {topics: [p]}\n")
    assert flow.flow("backup", "primary").topics == ("p",)
    assert flow.flow("primary", "backup").topics == ("orders",)


def test_properties_file_keeps_mm2_default_when_it_sets_no_topics() -> None:
    config = parse_properties_text(
        "clusters = primary, backup\nprimary.bootstrap.servers = 127.0.0.1:9092\n"
        "backup.bootstrap.servers = 127.0.0.1:9192\nprimary->backup.enabled = true\n"
    )
    assert config.flow("primary", "backup").topics == (".*",)
