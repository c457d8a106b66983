"""`make up`'s summary: each enabled flow with the topics it allows and how to change them."""

from __future__ import annotations

from pathlib import Path

from srm_common.config import parse_yaml_text
from srm_local import stack_summary

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
flows:
  primary->backup: {enabled: true}
  backup->primary: {enabled: true, topics: [orders, "sales-.*"]}
"""


def test_summary_names_allowed_topics_and_the_command_when_flows_are_enabled() -> None:
    config = parse_yaml_text(CONFIG, "srm.yaml")
    text = stack_summary.summary(config, Path("srm.yaml"), [], [], [])
    assert (
        "  flow primary->backup topics allowed: none yet (allow some: srm-control topics"
        " --source primary --target backup --add 'PATTERN')"
    ) in text, text
    assert (
        "  flow backup->primary topics allowed: orders, sales-.*  (change: srm-control topics"
        " --source backup --target primary --add/--remove 'PATTERN')"
    ) in text, text


def test_summary_says_none_when_no_flow_is_enabled() -> None:
    config = parse_yaml_text(CONFIG.replace("enabled: true", "enabled: false"), "srm.yaml")
    assert "  enabled flows    none" in stack_summary.summary(config, Path("srm.yaml"), [], [], [])
