"""Replications, topics and clusters as the gateway shows them, from a folded log."""

from __future__ import annotations

import pytest
from srm_api_gateway import views
from srm_api_gateway.testing import FLOW, history
from srm_common.config.model import SrmConfig
from srm_common.control.state import ControlState, replay


def test_a_replication_shows_what_the_log_says_about_it(config: SrmConfig) -> None:
    state = replay(history())
    flow = views.replication(config, state, "primary", "backup")
    assert flow["status"] == "halted" and flow["enabled"] is True
    assert (flow["topics"], flow["partitions"], flow["tasks"], flow["tasks_unassigned"]) == (
        2,
        3,
        3,
        0,
    )
    assert flow["allow"]["topics"] == ["orders", "payments"], "the log's list, not the file's"
    assert flow["halted"] == [
        {
            "topic": "orders",
            "partition": 1,
            "kind": "conflict",
            "reason": "another writer at offset 7",
            "driver": "d1",
        }
    ]
    other = views.replication(config, state, "backup", "primary")
    assert other["status"] == "disabled"


def test_before_any_task_config_an_enabled_flow_is_pending(config: SrmConfig) -> None:
    state = replay(history()[:3])
    assert views.replication(config, state, "primary", "backup")["status"] == "pending"


def test_topics_carry_their_remote_names_and_halted_partitions(config: SrmConfig) -> None:
    topics = views.replicated_topics(config, replay(history()), "primary", "backup")
    assert topics == [
        {
            "topic": "orders",
            "remote_topic": "primary.orders",
            "partitions": 2,
            "halted_partitions": [1],
        },
        {
            "topic": "payments",
            "remote_topic": "primary.payments",
            "partitions": 1,
            "halted_partitions": [],
        },
    ]


def test_replications_by_target_and_unknown_aliases(config: SrmConfig) -> None:
    state = replay(history())
    assert [r["target"] for r in views.replications(config, state, "backup")] == ["backup"]
    assert len(views.replications(config, state)) == 2
    with pytest.raises(views.NotFound, match="unknown cluster alias 'east'; known aliases"):
        views.replications(config, state, "east")
    with pytest.raises(views.NotFound, match="unknown cluster alias 'east'"):
        views.replication(config, state, "east", "backup")
    with pytest.raises(views.NotFound, match="no replication backup->backup"):
        views.replication(config, state, "backup", "backup")


def test_cluster_info_shows_addresses_and_never_client_secrets(config: SrmConfig) -> None:
    info = views.cluster_info(config, replay(history()), "backup")
    assert info == {
        "alias": "backup",
        "bootstrap_servers": ["127.0.0.1:8"],
        "replicating_from": ["primary"],
        "replicating_to": [],
    }
    assert "secret" not in str(info)


def test_drivers_list_their_tasks_and_flows(config: SrmConfig) -> None:
    [driver] = views.drivers(replay(history()))
    assert driver["driver"] == "d1" and driver["flows"] == [FLOW] and len(driver["tasks"]) == 3
    assert views.drivers(ControlState()) == []
