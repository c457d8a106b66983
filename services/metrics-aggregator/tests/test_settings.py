"""The aggregator's settings from srm.yaml, and its command line's answers to mistakes."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_common.config import parse_yaml_text
from srm_common.errors import ConfigError
from srm_metrics_aggregator.cli import main
from srm_metrics_aggregator.settings import aggregator_settings

YAML = """
clusters:
  primary: {bootstrap.servers: "a:9092"}
  backup: {bootstrap.servers: "b:9092,c:9092"}
replication:
  replication.factor: 2
{extra}
flows:
  primary->backup: {enabled: true}
"""


def config(extra: str = ""):  # type: ignore[no-untyped-def]
    return parse_yaml_text(YAML.replace("{extra}", extra), source="srm.yaml")


def test_defaults() -> None:
    settings = aggregator_settings(config(), "backup")
    assert settings.bootstrap_servers == ("b:9092", "c:9092")
    assert settings.folds.windows == (60_000, 3_600_000)
    assert (settings.folds.grace(60_000), settings.folds.update_ms) == (30_000, 5_000)
    assert settings.replication_factor == 2  # the flows' into backup
    assert settings.topic("contributions") == "srm-metrics-aggregator.contributions.internal"


def test_keys() -> None:
    extra = (
        "  srm.metrics.windows: 10s,5m\n  srm.metrics.grace.ms: 2000\n"
        "  srm.metrics.aggregator.id: agg-eu\n  srm.metrics.topic.replication.factor: 3\n"
    )
    settings = aggregator_settings(config(extra), "backup")
    assert settings.folds.windows == (10_000, 300_000)
    assert settings.folds.grace(10_000) == 2_000
    assert settings.app_id == "agg-eu" and settings.replication_factor == 3


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("  srm.metrics.windows: 1y", "srm.metrics.windows"),
        ("  srm.metrics.aggregator.id: a/b", "srm.metrics.aggregator.id"),
        ("  srm.metrics.update.ms: soon", "srm.metrics.update.ms"),
    ],
)
def test_bad_keys_are_named(extra: str, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        aggregator_settings(config(extra), "backup")


def test_unknown_cluster_and_bad_config_exit_2(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "srm.yaml"
    path.write_text(YAML.replace("{extra}", ""))
    assert main(["--config", str(path), "--cluster", "dr"]) == 2
    assert "unknown cluster alias 'dr'" in capsys.readouterr().err
    assert (
        main(["--config", str(path), "--cluster", "backup", "--set", "srm.metrics.windows=x"]) == 2
    )
    assert "srm.metrics.windows" in capsys.readouterr().err
