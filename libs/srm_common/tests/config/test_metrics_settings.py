"""The raw metrics keys: defaults, per flow values, and values refused with a fix."""

from __future__ import annotations

import pytest
from srm_common.config import parse_properties_text
from srm_common.errors import ConfigError

HEADER = """\
clusters = primary, backup
primary.bootstrap.servers = 127.0.0.1:9092
backup.bootstrap.servers = 127.0.0.1:9192
primary->backup.enabled = true
"""


def flow(body: str = ""):  # type: ignore[no-untyped-def]
    return parse_properties_text(HEADER + body, source="mm2.properties").flow("primary", "backup")


def test_metrics_are_on_every_ten_seconds_into_a_topic_of_the_broker_default_factor() -> None:
    f = flow()
    assert (f.metrics_enabled, f.metrics_interval_ms, f.metrics_topic_replication_factor) == (
        True,
        10000,
        -1,
    )


def test_a_flow_sets_its_own_interval_and_switch() -> None:
    f = flow(
        "srm.metrics.interval.ms = 2000\nprimary->backup.srm.metrics.enabled = false\n"
        "srm.metrics.topic.replication.factor = 1\n"
    )
    assert (f.metrics_enabled, f.metrics_interval_ms, f.metrics_topic_replication_factor) == (
        False,
        2000,
        1,
    )


@pytest.mark.parametrize("value", ["999", "0", "-1", "ten", "1.5"])
def test_an_interval_under_a_second_is_refused_naming_the_key_the_minimum_and_the_switch(
    value: str,
) -> None:
    with pytest.raises(ConfigError) as caught:
        flow(f"srm.metrics.interval.ms = {value}\n")
    assert str(caught.value) == (
        f"mm2.properties:5, key 'srm.metrics.interval.ms': expected a whole number >= 1000,"
        f" got '{value}'; to turn the job off set srm.metrics.enabled to false"
    )


def test_a_switch_that_is_not_a_boolean_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        flow("srm.metrics.enabled = maybe\n")
    assert "srm.metrics.enabled" in str(caught.value)
