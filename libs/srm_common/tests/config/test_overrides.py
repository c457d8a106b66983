"""Overrides given next to the file (``make up`` moves ports with them)."""

from __future__ import annotations

import pytest
from srm_common.config import parse_properties_text, parse_yaml_text
from srm_common.errors import ConfigError

PROPERTIES = """\
clusters = primary, backup
primary.bootstrap.servers = 127.0.0.1:9092
backup.bootstrap.servers = 127.0.0.1:9192
primary->backup.enabled = true
"""

YAML = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9092"}
  backup: {bootstrap.servers: "127.0.0.1:9192"}
flows:
  primary->backup: {enabled: true}
"""


@pytest.mark.parametrize("parse", [parse_properties_text, parse_yaml_text])
def test_override_replaces_bootstrap_servers_everywhere_when_given(parse):
    text = PROPERTIES if parse is parse_properties_text else YAML
    config = parse(text, overrides={"primary.bootstrap.servers": "127.0.0.1:19092"})
    assert config.cluster("primary").bootstrap_servers == ("127.0.0.1:19092",)
    flow = config.flow("primary", "backup")
    assert flow.source_consumer["bootstrap.servers"] == "127.0.0.1:19092", (
        "the source consumer must connect to the overridden address"
    )
    assert not config.warnings, f"an override is not a repeated key: {config.warnings}"


def test_bad_override_is_reported_as_an_override_when_its_value_is_invalid():
    with pytest.raises(ConfigError) as error:
        parse_properties_text(PROPERTIES, "mm2.properties", overrides={"tasks.max": "0"})
    assert "tasks.max (override)" in str(error.value), str(error.value)
