"""Bad configurations: each is one ConfigError naming the file, the line, the key and a fix."""

from __future__ import annotations

from textwrap import dedent

import pytest
from srm_common.config import ConfigProblemsError, parse_properties_text, parse_yaml_text
from srm_common.errors import ConfigError, InvalidPatternError

HEADER = """\
clusters = primary, backup
primary.bootstrap.servers = 127.0.0.1:9092
backup.bootstrap.servers = 127.0.0.1:9192
"""

YAML_HEADER = """\
clusters:
  primary:
    bootstrap.servers: 127.0.0.1:9092
  backup:
    bootstrap.servers: 127.0.0.1:9192
"""


def props_error(body: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_properties_text(HEADER + dedent(body), source="mm2.properties")
    return caught.value


def yaml_error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_yaml_text(dedent(text), source="srm.yaml")
    return caught.value


def test_unknown_alias_is_named_with_known_aliases_when_flow_key_uses_undeclared_cluster() -> None:
    error = props_error("primary->nowhere.enabled = true\n")
    assert str(error) == (
        "mm2.properties:4, key 'primary->nowhere.enabled': unknown cluster alias 'nowhere'"
        " in flow 'primary->nowhere'; known aliases: primary, backup"
        " (aliases are declared in 'clusters')"
    )
    assert (error.source, error.key, error.line) == (
        "mm2.properties",
        "primary->nowhere.enabled",
        4,
    )


def test_close_alias_is_suggested_when_flow_alias_is_misspelt() -> None:
    error = props_error("primry->backup.enabled = true\n")
    assert "unknown cluster alias 'primry'" in str(error)
    assert "did you mean 'primary'?" in str(error)


def test_unknown_alias_is_reported_with_yaml_path_when_yaml_flow_names_undeclared_cluster() -> None:
    error = yaml_error(YAML_HEADER + "flows:\n  primary->nowhere:\n    enabled: true\n")
    assert str(error) == (
        "srm.yaml:8, key 'flows.primary->nowhere.enabled': unknown cluster alias 'nowhere'"
        " in flow 'primary->nowhere'; known aliases: primary, backup"
        " (aliases are declared in 'clusters:')"
    )


def test_self_flow_is_refused_when_source_equals_target() -> None:
    error = props_error("primary->primary.enabled = true\n")
    assert str(error) == (
        "mm2.properties:4, key 'primary->primary.enabled': a flow from cluster 'primary' to"
        " itself is not allowed; source and target must be two different aliases of:"
        " primary, backup"
    )


def test_bad_entry_is_named_when_a_topic_regex_does_not_compile() -> None:
    error = props_error("primary->backup.topics = orders, [payments\n")
    assert isinstance(error, InvalidPatternError)
    assert error.pattern == "[payments"
    assert str(error) == (
        "mm2.properties:4, key 'primary->backup.topics': invalid regular expression"
        " '[payments': missing ] in '[payments'. Patterns must match whole names (for"
        " example 'orders', 'orders-.*' or '.*'); escape a literal dot as '\\.'"
    )


@pytest.mark.parametrize(
    "key", ["topics.exclude", "groups", "groups.exclude", "config.properties.exclude"]
)
def test_line_and_key_are_named_when_any_pattern_list_has_a_bad_regex(key: str) -> None:
    error = props_error(f"{key} = ok, (unclosed\n")
    assert isinstance(error, InvalidPatternError)
    assert (error.key, error.line, error.pattern) == (key, 4, "(unclosed")


def test_bad_yaml_list_item_is_named_when_a_yaml_regex_does_not_compile() -> None:
    error = yaml_error(YAML_HEADER + "replication:\n  groups:\n    - billing\n    - '*bad'\n")
    assert isinstance(error, InvalidPatternError)
    assert (error.key, error.line, error.pattern) == ("replication.groups", 7, "*bad")


def test_key_to_add_is_named_when_a_cluster_has_no_bootstrap_servers() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_properties_text(
            "clusters = primary, backup\nbackup.bootstrap.servers = b:9092\n",
            source="mm2.properties",
        )
    assert str(caught.value) == (
        "mm2.properties:1, key 'primary.bootstrap.servers': cluster 'primary' has no bootstrap"
        " servers; add 'primary.bootstrap.servers = host:9092'"
    )


def test_yaml_place_is_named_when_a_yaml_cluster_has_no_bootstrap_servers() -> None:
    error = yaml_error("clusters:\n  primary:\n    bootstrap.servers: a:9092\n  backup: {}\n")
    assert str(error) == (
        "srm.yaml:4, key 'clusters.backup.bootstrap.servers': cluster 'backup' has no bootstrap"
        " servers; add 'bootstrap.servers: host:9092' under 'clusters: backup:'"
    )


def test_host_port_is_required_when_bootstrap_servers_lack_a_port() -> None:
    error = props_error("primary.bootstrap.servers = kafka-1\n")
    assert error.line == 4, "the rejected value, not a missing one, is the problem"
    assert str(error) == (
        "mm2.properties:4, key 'primary.bootstrap.servers': expected host:port entries such as"
        " 'kafka-1:9092', got 'kafka-1'"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "emit.checkpoints.interval.seconds = -5",
            "expected a whole number of seconds >= 1, got '-5'; to turn the job off set"
            " emit.checkpoints.enabled to false",
        ),
        (
            "primary->backup.refresh.topics.interval.seconds = 1.5",
            "expected a whole number of seconds >= 1, got '1.5'; to turn the job off set"
            " refresh.topics.enabled to false",
        ),
        (
            "sync.group.offsets.interval.seconds = 0",
            "expected a whole number of seconds >= 1, got '0'; to turn the job off set"
            " sync.group.offsets.enabled to false",
        ),
        ("tasks.max = 0", "expected a whole number >= 1, got '0'"),
        ("tasks.max = four", "expected a whole number >= 1, got 'four'"),
        (
            "tasks.max = 3000000000",
            "expected a whole number >= 1, got '3000000000', which is out of range",
        ),
        (
            "replication.factor = 0",
            "expected a whole number >= 1, or -1 for the broker's default, got '0'",
        ),
        (
            "heartbeats.topic.replication.factor = -2",
            "expected a whole number >= 1, or -1 for the broker's default, got '-2'",
        ),
        ("offset.lag.max = -1", "expected a whole number >= 0, got '-1'"),
        ("offset-syncs.topic.location = cluster", "expected one of source, target, got 'cluster'"),
    ],
)
def test_valid_range_is_stated_when_a_number_or_choice_is_out_of_range(
    line: str, message: str
) -> None:
    error = props_error(line + "\n")
    key = line.split(" = ")[0]
    assert str(error) == f"mm2.properties:4, key '{key}': {message}"


def test_minus_one_is_accepted_when_replication_factor_means_broker_default() -> None:
    config = parse_properties_text(HEADER + "replication.factor = -1\n")
    assert config.flow("primary", "backup").replication_factor == -1


@pytest.mark.parametrize("value", ["yes", "1", "on", "ture", ""])
def test_only_true_or_false_is_accepted_when_a_boolean_is_bad(value: str) -> None:
    error = props_error(f"primary->backup.enabled = {value}\n")
    assert str(error) == (
        f"mm2.properties:4, key 'primary->backup.enabled': expected true or false (in any"
        f" case), got {value!r}"
    )


def test_yaml_yes_is_not_a_boolean_when_used_as_a_flag() -> None:
    error = yaml_error(YAML_HEADER + "flows:\n  primary->backup:\n    enabled: yes\n")
    assert str(error) == (
        "srm.yaml:8, key 'flows.primary->backup.enabled': expected true or false (in any"
        " case), got 'yes'"
    )


def test_closest_key_is_suggested_when_a_flow_key_is_misspelt() -> None:
    error = props_error("primary->backup.topcs = orders\n")
    assert str(error) == (
        "mm2.properties:4, key 'primary->backup.topcs': unknown key 'primary->backup.topcs';"
        " did you mean 'primary->backup.topics'?"
    )


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("tasks.mx", "tasks.max"),
        ("sync.group.offset.enabled", "sync.group.offsets.enabled"),
        ("emit.checkpoint.interval.seconds", "emit.checkpoints.interval.seconds"),
        ("bootstrap.server", "bootstrap.servers"),
        ("primary.bootstrap.server", "primary.bootstrap.servers"),
        ("primary.ssl.truststore.locaton", "primary.ssl.truststore.location"),
        ("primary.consmer.fetch.max.bytes", "primary.consumer.fetch.max.bytes"),
        ("primary->backup.consumr.fetch.max.bytes", "primary->backup.consumer.fetch.max.bytes"),
    ],
)
def test_closest_key_is_suggested_when_any_key_is_misspelt(key: str, suggestion: str) -> None:
    error = props_error(f"{key} = 1\n")
    assert str(error) == (
        f"mm2.properties:4, key '{key}': unknown key '{key}'; did you mean '{suggestion}'?"
    )


def test_yaml_path_is_suggested_when_a_yaml_flow_key_is_misspelt() -> None:
    error = yaml_error(YAML_HEADER + "flows:\n  primary->backup:\n    topcs: orders\n")
    assert str(error) == (
        "srm.yaml:8, key 'flows.primary->backup.topcs': unknown key"
        " 'flows.primary->backup.topcs'; did you mean 'flows.primary->backup.topics'?"
    )


def test_example_is_given_when_clusters_is_missing() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_properties_text("primary.bootstrap.servers = x:1\n", source="mm2.properties")
    assert str(caught.value) == (
        "mm2.properties: 'clusters' is missing; declare the cluster aliases with"
        " 'clusters = primary, backup'"
    )


def test_key_to_fill_is_named_when_bootstrap_servers_is_empty() -> None:
    error = props_error("primary.bootstrap.servers =\n")
    assert str(error) == (
        "mm2.properties:4, key 'primary.bootstrap.servers': cluster 'primary' has no bootstrap"
        " servers; add 'primary.bootstrap.servers = host:9092'"
    )


def test_example_is_given_when_clusters_is_empty() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_properties_text("# no aliases\nclusters =\n", source="mm2.properties")
    assert str(caught.value) == (
        "mm2.properties:2, key 'clusters': no cluster aliases declared; add"
        " 'clusters = primary, backup'"
    )


def test_yaml_example_is_given_when_yaml_clusters_is_empty() -> None:
    error = yaml_error("clusters: {}\n")
    assert str(error) == (
        "srm.yaml:1, key 'clusters': no cluster aliases declared; add a 'clusters:' mapping"
        " with one entry per alias (e.g. 'primary:')"
    )


@pytest.mark.parametrize("alias", ["us west", "us.west", "a->b", "café"])
def test_allowed_characters_are_listed_when_an_alias_has_bad_characters(alias: str) -> None:
    text = f"clusters = primary, {alias}\nprimary.bootstrap.servers = a:1\n"
    with pytest.raises(ConfigError) as caught:
        parse_properties_text(text, source="mm2.properties")
    assert str(caught.value) == (
        f"mm2.properties:1, key 'clusters': invalid cluster alias {alias!r}: use only"
        " letters, digits, '_' and '-' (aliases prefix keys and topic names, so whitespace,"
        " '.' and '->' are not allowed)"
    )


def test_separator_clash_is_reported_when_an_alias_contains_the_separator() -> None:
    text = (
        "clusters = us_west, backup\nus_west.bootstrap.servers = a:1\n"
        "backup.bootstrap.servers = b:1\nreplication.policy.separator = _\n"
    )
    with pytest.raises(ConfigError) as caught:
        parse_properties_text(text, source="mm2.properties")
    assert str(caught.value) == (
        "mm2.properties:1, key 'clusters': cluster alias 'us_west' contains the replication"
        " separator '_' (set at line 4), so remote topic names such as 'us_west_orders' could"
        " not be traced to their source; rename the alias or choose another"
        " replication.policy.separator"
    )


def test_ambiguity_is_explained_when_an_alias_is_a_key_word() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_properties_text("clusters = ssl, backup\n", source="mm2.properties")
    assert "invalid cluster alias 'ssl': it is also the first word of MM2 keys" in str(caught.value)


def test_duplicate_alias_is_refused_when_declared_twice() -> None:
    error = props_error("clusters = primary, backup, primary\n")
    assert str(error) == (
        "mm2.properties:4, key 'clusters': cluster alias 'primary' is declared twice"
    )


def test_valid_values_are_listed_when_the_policy_class_is_unknown() -> None:
    error = props_error("replication.policy.class = com.example.NoSuchPolicy\n")
    assert str(error).startswith(
        "mm2.properties:4, key 'replication.policy.class': cannot import module 'com.example'"
    )
    assert "DefaultReplicationPolicy or IdentityReplicationPolicy" in str(error)


def test_valid_values_are_listed_when_a_flow_policy_class_is_unknown() -> None:
    error = props_error("primary->backup.replication.policy.class = Prefixless\n")
    assert str(error).startswith(
        "mm2.properties:4, key 'primary->backup.replication.policy.class': unknown"
        " replication policy 'Prefixless'; valid values are DefaultReplicationPolicy or"
        " IdentityReplicationPolicy"
    )


def test_policy_short_names_are_accepted_when_mm2_or_python_names_are_used() -> None:
    for name in (
        "identity",
        "IdentityReplicationPolicy",
        "srm_common.domain.policy.DefaultReplicationPolicy",
    ):
        config = parse_properties_text(HEADER + f"replication.policy.class = {name}\n")
        assert config.flow("primary", "backup").replication_policy_class == name


def test_cluster_level_connector_key_is_refused_because_mm2_ignores_it() -> None:
    error = props_error("primary.tasks.max = 4\n")
    assert str(error) == (
        "mm2.properties:4, key 'primary.tasks.max': 'tasks.max' is a replication setting and"
        " MM2 ignores it at cluster level; set it for every flow as 'tasks.max' or for one"
        " flow as 'primary->backup.tasks.max'"
    )


def test_flow_level_connection_key_is_refused_because_mm2_ignores_it() -> None:
    error = props_error("primary->backup.security.protocol = SSL\n")
    assert str(error) == (
        "mm2.properties:4, key 'primary->backup.security.protocol': connection settings belong"
        " to a cluster and MM2 ignores them per flow; set 'primary.security.protocol' or"
        " 'backup.security.protocol' instead"
    )


def test_undeclared_alias_is_named_when_a_cluster_key_uses_it() -> None:
    error = props_error("primry.bootstrap.servers = a:1\n")
    assert str(error) == (
        "mm2.properties:4, key 'primry.bootstrap.servers': unknown cluster alias 'primry';"
        " known aliases: primary, backup; did you mean 'primary'? (aliases are declared in"
        " 'clusters')"
    )


def test_flow_example_is_given_when_exactly_once_support_is_set_at_top_level() -> None:
    error = props_error("exactly.once.support = required\n")
    assert str(error) == (
        "mm2.properties:4, key 'exactly.once.support': MM2 ignores 'exactly.once.support' at"
        " top level (it is a Connect key, not an MM2 one); set it per flow, e.g."
        " 'primary->backup.exactly.once.support'"
    )


def test_security_protocols_are_listed_when_security_protocol_is_bad() -> None:
    error = props_error("primary.security.protocol = TLS\n")
    assert str(error) == (
        "mm2.properties:4, key 'primary.security.protocol': expected one of PLAINTEXT, SSL,"
        " SASL_PLAINTEXT, SASL_SSL, got 'TLS'"
    )


def test_every_problem_is_listed_one_per_line_when_a_file_has_several() -> None:
    error = props_error("tasks.max = 0\nprimary->backup.topcs = x\nprimary->backup.enabled = no\n")
    assert isinstance(error, ConfigProblemsError)
    assert [p.line for p in error.problems] == [4, 5, 6]
    assert str(error) == (
        "3 problems in mm2.properties:\n"
        "  mm2.properties:4, key 'tasks.max': expected a whole number >= 1, got '0'\n"
        "  mm2.properties:5, key 'primary->backup.topcs': unknown key 'primary->backup.topcs';"
        " did you mean 'primary->backup.topics'?\n"
        "  mm2.properties:6, key 'primary->backup.enabled': expected true or false (in any"
        " case), got 'no'"
    )


def test_line_is_named_when_yaml_syntax_is_broken() -> None:
    error = yaml_error("clusters:\n  primary:\n    bootstrap.servers: [a:9092\n")
    assert str(error) == (
        "srm.yaml:4: YAML syntax error: expected ',' or ']', but got '<stream end>'"
        " (while parsing a flow sequence at line 3)"
    )


def test_sections_are_suggested_when_a_yaml_section_is_unknown() -> None:
    error = yaml_error(YAML_HEADER + "flow:\n  primary->backup: {enabled: true}\n")
    assert str(error) == "srm.yaml:6, key 'flow': unknown section 'flow'; did you mean 'flows'?"


def test_flow_name_form_is_explained_when_a_yaml_flow_has_no_arrow() -> None:
    error = yaml_error(YAML_HEADER + "flows:\n  primary-backup:\n    enabled: true\n")
    assert str(error) == (
        "srm.yaml:7, key 'flows.primary-backup': a flow is named 'source->target',"
        " got 'primary-backup'"
    )


def test_merge_keys_are_refused_when_yaml_uses_them() -> None:
    error = yaml_error(YAML_HEADER + "flows:\n  primary->backup:\n    <<: {enabled: true}\n")
    assert str(error) == "srm.yaml:8: merge keys ('<<') are not supported; write the keys out"


def test_line_is_named_when_a_unicode_escape_is_malformed() -> None:
    error = props_error("topics = caf\\u00e\n")
    assert str(error) == (
        "mm2.properties:4: malformed \\uXXXX escape '\\u00e': write four hex digits, or '\\\\'"
        " for a literal backslash"
    )


def test_flow_needs_a_setting_when_a_flow_key_has_no_dot() -> None:
    error = props_error("primary->backup = true\n")
    assert str(error) == (
        "mm2.properties:4, key 'primary->backup': a flow key needs a setting after the flow"
        " name, e.g. 'primary->backup.enabled'"
    )


def test_unknown_alias_error_is_not_found_like_when_model_is_asked_for_it() -> None:
    config = parse_properties_text(HEADER, source="mm2.properties")
    with pytest.raises(ConfigError) as caught:
        config.flow("primary", "nowhere")
    assert str(caught.value) == (
        "mm2.properties, key 'primary->nowhere': unknown cluster alias 'nowhere';"
        " known aliases: primary, backup"
    )
    with pytest.raises(ConfigError, match="to itself"):
        config.flow("primary", "primary")


def test_typo_is_caught_when_it_falls_in_a_pass_through_family() -> None:
    error = props_error("primary->backup.task.max = 4\n")
    assert str(error) == (
        "mm2.properties:4, key 'primary->backup.task.max': unknown key"
        " 'primary->backup.task.max'; did you mean 'primary->backup.tasks.max'?"
    )
