"""Loading files: format by extension, the shipped example configs, unreadable files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from srm_common.config import load_config, parse_properties_text, parse_yaml_text
from srm_common.errors import ConfigError

ROOT = Path(__file__).resolve().parents[4]
LOCAL_YAML = ROOT / "deploy" / "local" / "srm.yaml"
EXAMPLE_PROPERTIES = ROOT / "docs" / "examples" / "mm2.properties"
FIXTURES = Path(__file__).parent / "fixtures"


def test_local_yaml_and_example_properties_load_equal_when_both_describe_local_dev() -> None:
    from_yaml = load_config(LOCAL_YAML)
    from_properties = load_config(EXAMPLE_PROPERTIES)
    assert from_yaml.clusters == from_properties.clusters
    assert from_yaml.flows == from_properties.flows
    assert from_yaml.extra == from_properties.extra
    assert from_yaml.warnings == from_properties.warnings == ()


def test_local_yaml_has_dev_settings_when_loaded() -> None:
    config = load_config(LOCAL_YAML)
    assert config.source == str(LOCAL_YAML)
    assert config.cluster("primary").bootstrap_servers == ("127.0.0.1:9092",)
    assert config.cluster("backup").bootstrap_servers == ("127.0.0.1:9192",)
    assert [f.name for f in config.enabled_flows()] == ["primary->backup", "backup->primary"]
    for flow in config.enabled_flows():
        assert (flow.topics, flow.groups) == ((".*",), (".*",))
        assert flow.topics_exclude == (r".*[\-\.]internal", r".*\.replica", "__.*")
        assert (flow.refresh_topics_interval_seconds, flow.refresh_groups_interval_seconds) == (
            10,
            10,
        )
        assert flow.emit_heartbeats_interval_seconds == 1
        assert flow.emit_checkpoints_interval_seconds == 5
        assert flow.sync_group_offsets_enabled and flow.sync_group_offsets_interval_seconds == 5
        assert flow.sync_topic_configs_interval_seconds == 10
        assert flow.replication_factor == 1
        assert (
            flow.heartbeats_topic_replication_factor,
            flow.checkpoints_topic_replication_factor,
            flow.offset_syncs_topic_replication_factor,
        ) == (1, 1, 1)


@pytest.mark.parametrize("name", ["srm.yml", "SRM.YAML"])
def test_yaml_is_read_when_the_extension_is_yaml_or_yml(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(LOCAL_YAML.read_text())
    assert load_config(path).flows == load_config(LOCAL_YAML).flows


@pytest.mark.parametrize("name", ["mm2.conf", "srm.properties", "mm2"])
def test_properties_are_read_when_the_extension_is_anything_else(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(EXAMPLE_PROPERTIES.read_text())
    assert load_config(str(path)).flows == load_config(EXAMPLE_PROPERTIES).flows


def test_fixture_with_every_level_loads_when_read_from_disk() -> None:
    config = load_config(FIXTURES / "three-clusters.properties")
    assert config.aliases == ("us-west", "us-east", "eu")
    flow = config.flow("us-west", "eu")
    assert flow.enabled and flow.tasks_max == 4 and flow.topics == ("orders", "payments-.*")
    assert flow.source_consumer["security.protocol"] == "SSL"
    assert flow.source_consumer["ssl.truststore.location"] == "/etc/srm/us-west.jks"
    assert config.flow("us-east", "eu").topics_exclude == ("tmp-.*",), "legacy alias applies"


def test_reason_is_given_when_the_file_cannot_be_read(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as caught:
        load_config(missing)
    assert str(caught.value) == (
        f"{missing}: cannot read the configuration file: No such file or directory"
    )


def test_line_is_given_when_the_file_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_bytes(b"clusters = a\n# caf\xe9\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}:2: the file is not valid UTF-8; save it as UTF-8 (use \\uXXXX escapes in"
        " properties)"
    )


_flow_settings = st.fixed_dictionaries(
    {
        "enabled": st.booleans(),
        "tasks.max": st.integers(1, 64),
        "replication.factor": st.sampled_from([-1, 1, 2, 3]),
        "emit.checkpoints.interval.seconds": st.integers(1, 10_000),
        "sync.group.offsets.enabled": st.booleans(),
        "topics": st.lists(st.sampled_from(["orders", "pay-.*", "a\\.b", "x{2}"]), max_size=3),
        "offset-syncs.topic.location": st.sampled_from(["source", "target"]),
    }
)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


@settings(max_examples=50)
@given(top=_flow_settings, flow=_flow_settings)
def test_both_formats_load_the_same_model_when_settings_are_random(
    top: dict[str, object], flow: dict[str, object]
) -> None:
    properties = "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\n"
    # Java properties read "\." as "." : a regex backslash is doubled, as MM2 users must.
    properties += "".join(f"{k} = {_text(v)}\n".replace("\\", "\\\\") for k, v in top.items())
    properties += "".join(f"a->b.{k} = {_text(v)}\n".replace("\\", "\\\\") for k, v in flow.items())
    yaml_text = "clusters:\n  a: {bootstrap.servers: 'a:1'}\n  b: {bootstrap.servers: 'b:1'}\n"
    yaml_text += "replication:\n" + "".join(f"  {k}: {_yaml(v)}\n" for k, v in top.items())
    yaml_text += "flows:\n  a->b:\n" + "".join(f"    {k}: {_yaml(v)}\n" for k, v in flow.items())
    from_properties = parse_properties_text(properties)
    from_yaml = parse_yaml_text(yaml_text)
    assert from_properties.flows == from_yaml.flows
    a_to_b, b_to_a = from_yaml.flow("a", "b"), from_yaml.flow("b", "a")
    assert (a_to_b.enabled, a_to_b.tasks_max, a_to_b.topics) == (
        flow["enabled"],
        flow["tasks.max"],
        tuple(flow["topics"]),  # type: ignore[arg-type]
    )
    assert (b_to_a.enabled, b_to_a.tasks_max) == (top["enabled"], top["tasks.max"])


def _yaml(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(f"'{v}'" for v in value) + "]"
    return _text(value)
