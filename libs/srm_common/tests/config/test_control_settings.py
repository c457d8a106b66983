"""The control path's keys (``srm.control.*``, ``srm.driver.*``) as the services read them."""

from __future__ import annotations

import pytest
from srm_common.config import parse_properties_text
from srm_common.config.control import control_settings
from srm_common.errors import ConfigError

HEADER = """\
clusters = primary, backup
primary.bootstrap.servers = 127.0.0.1:9092
backup.bootstrap.servers = 127.0.0.1:9192
"""


def test_defaults_put_the_control_topics_on_the_first_cluster() -> None:
    settings = control_settings(parse_properties_text(HEADER))
    assert (settings.cluster, settings.client["bootstrap.servers"]) == ("primary", "127.0.0.1:9092")
    assert settings.events_topic == "srm-control.events.internal"
    assert (settings.replication_factor, settings.session_timeout_ms) == (-1, 10_000)
    assert (settings.heartbeat_interval_ms, settings.lease_ms) == (1_000, 5_000)
    assert settings.write_timeout_ms == 10_000


def test_every_control_key_is_read_at_top_level() -> None:
    settings = control_settings(
        parse_properties_text(
            HEADER + "srm.control.cluster = backup\n"
            "srm.control.topic.prefix = ops.srm\n"
            "srm.control.replication.factor = 3\n"
            "srm.driver.session.timeout.ms = 30000\n"
            "srm.driver.heartbeat.interval.ms = 2000\n"
            "srm.driver.lease.ms = 12000\n"
            "srm.driver.write.timeout.ms = 20000\n"
        )
    )
    assert (settings.cluster, settings.client["bootstrap.servers"]) == ("backup", "127.0.0.1:9192")
    assert (settings.events_topic, settings.election_group) == (
        "ops.srm.events.internal",
        "ops.srm.coordinators",
    )
    assert (settings.replication_factor, settings.session_timeout_ms) == (3, 30_000)
    assert (settings.heartbeat_interval_ms, settings.lease_ms) == (2_000, 12_000)
    assert settings.write_timeout_ms == 20_000
    assert settings.wait_out_ms > 12_000 + 20_000, "the leader waits out lease and writes"


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("srm.driver.heartbeat.interval.ms = 5000\n", "srm.driver.heartbeat.interval.ms"),
        ("srm.driver.lease.ms = 1000\n", "srm.driver.lease.ms"),
        ("srm.control.topic.prefix = a/b\n", "srm.control.topic.prefix"),
    ],
)
def test_a_control_value_that_cannot_work_names_its_key(body: str, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        control_settings(parse_properties_text(HEADER + body))
    assert caught.value.key == key
