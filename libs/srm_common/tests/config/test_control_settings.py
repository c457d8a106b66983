"""The control path's keys (``srm.control.*``, ``srm.driver.*``, SRM's Driver Target
Cluster) as the services read them: a log per target cluster, the old single log's place."""

from __future__ import annotations

import pytest
from srm_common.config import parse_properties_text
from srm_common.config.control import control_plane, pinned_targets
from srm_common.errors import ConfigError

HEADER = """\
clusters = primary, backup
primary.bootstrap.servers = 127.0.0.1:9092
backup.bootstrap.servers = 127.0.0.1:9192
"""


def test_every_target_cluster_holds_the_log_of_the_flows_into_it() -> None:
    plane = control_plane(parse_properties_text(HEADER))
    assert plane.targets == ("backup", "primary"), "every ordered pair is a flow"
    settings = plane.log("backup")
    assert (settings.cluster, settings.client["bootstrap.servers"]) == ("backup", "127.0.0.1:9192")
    assert (settings.events_topic, settings.drivers_topic, settings.election_topic) == (
        "srm-control.log.internal",
        "srm-control.beats.internal",
        "srm-control.leader.internal",
    )
    assert (settings.election_group, settings.transactional_id) == (
        "srm-control.leaders",
        "srm-control.log-leader",
    )
    assert plane.log_of("primary->backup") == settings and plane.log_of("a->b") is None
    # The single log of an earlier release: on the first alias, under its own names.
    legacy = plane.legacy
    assert (legacy.name, legacy.events_topic) == ("legacy@primary", "srm-control.events.internal")
    assert (legacy.election_group, legacy.transactional_id) == (
        "srm-control.coordinators",
        "srm-control.coordinator",
    )
    assert (settings.replication_factor, settings.session_timeout_ms) == (-1, 10_000)
    assert (settings.heartbeat_interval_ms, settings.lease_ms) == (1_000, 5_000)
    assert settings.write_timeout_ms == 10_000


def test_every_control_key_is_read_at_top_level() -> None:
    plane = control_plane(
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
    legacy, settings = plane.legacy, plane.log("primary")
    assert (legacy.cluster, legacy.client["bootstrap.servers"]) == ("backup", "127.0.0.1:9192")
    assert (legacy.events_topic, settings.events_topic, settings.election_group) == (
        "ops.srm.events.internal",
        "ops.srm.log.internal",
        "ops.srm.leaders",
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
        control_plane(parse_properties_text(HEADER + body))
    assert caught.value.key == key


def test_a_driver_pinned_to_targets_serves_only_their_logs() -> None:
    three = HEADER.replace("primary, backup", "primary, backup, dr") + (
        "dr.bootstrap.servers = 127.0.0.1:9292\n"
    )
    config = parse_properties_text(three)
    assert pinned_targets(config) is None, "by default, every target"
    assert pinned_targets(config, "backup, dr") == ("backup", "dr")
    keyed = parse_properties_text(
        three + "streams.replication.manager.driver.target.cluster = dr\n"
    )
    assert pinned_targets(keyed) == ("dr",)
    assert pinned_targets(keyed, "backup") == ("backup",), "the flag wins over the key"
    assert control_plane(config).serving(["dr"]).targets == ("dr",)
    assert not keyed.warnings


@pytest.mark.parametrize(
    ("flag", "key", "message"),
    [
        ("nowhere", None, "--target: unknown cluster alias 'nowhere'; known aliases:"),
        ("", None, "--target needs one or more cluster aliases"),
        (None, "nowhere", "unknown cluster alias 'nowhere'"),
    ],
)
def test_a_pin_to_an_unknown_cluster_is_one_line_naming_it(
    flag: str | None, key: str | None, message: str
) -> None:
    body = HEADER + (f"streams.replication.manager.driver.target.cluster = {key}\n" if key else "")
    with pytest.raises(ConfigError) as caught:
        pinned_targets(parse_properties_text(body), flag)
    assert message in str(caught.value) and "\n" not in str(caught.value)
