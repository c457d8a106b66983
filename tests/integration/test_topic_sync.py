"""Remote topic creation, partition growth and config sync (TopicSync) on real clusters."""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from srm_common.config import FlowConfig, load_config
from srm_driver.kafka_admin import admin_client, increase_partitions, topic_partitions
from srm_driver.topic_sync import TopicSync, TopicSyncError

pytestmark = pytest.mark.integration

T = TypeVar("T")
IDENTITY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
SOURCE_CONFIGS = {
    "retention.ms": "3600000",
    "cleanup.policy": "compact",
    "max.message.bytes": "2000000",
    "min.insync.replicas": "1",  # in MM2's default config.properties.exclude
}


def make_flow(tmp_path: Path, kafka, **replication: object) -> FlowConfig:
    """Flow primary->backup from an srm.yaml with ``replication`` keys added."""
    document = {
        "clusters": {
            "primary": {"bootstrap.servers": kafka["primary"]},
            "backup": {"bootstrap.servers": kafka["backup"]},
        },
        "replication": {"replication.factor": 1, "topics": [".*"], **replication},
        "flows": {"primary->backup": {"enabled": True}},
    }
    path = tmp_path / "srm.yaml"
    path.write_text(json.dumps(document))  # JSON is YAML
    return load_config(path).flow("primary", "backup")


@pytest.fixture
def make_sync(kafka, tmp_path):
    """``make_sync(**replication)`` -> TopicSync for primary->backup on the test clusters."""
    clients: list[AdminClient] = []

    def build(**replication: object) -> TopicSync:
        flow = make_flow(tmp_path, kafka, **replication)
        source, target = admin_client(flow.source_admin), admin_client(flow.target_admin)
        clients.extend([source, target])
        return TopicSync(flow, source, target)

    yield build
    # Close them while the clusters still run: a caught error's traceback keeps a cycle
    # back to the TopicSync, so only a collection frees them before the session ends.
    clients.clear()
    gc.collect()


def eventually(read: Callable[[], T], check: Callable[[T], bool], what: str) -> T:
    """Poll ``read`` until ``check`` holds (metadata reaches brokers asynchronously)."""
    deadline = time.monotonic() + 15
    value = read()
    while not check(value):
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within 15 s; last seen: {value!r}")
        time.sleep(0.1)
        value = read()
    return value


def topic_level_configs(bootstrap: str, topic: str) -> dict[str, str]:
    """Configs set on the topic itself (source DYNAMIC_TOPIC_CONFIG)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    try:
        entries = admin.describe_configs([resource])[resource].result(30)
    except Exception:  # noqa: BLE001 - not visible yet: polled again by eventually()
        return {"<unknown topic>": topic}
    return {name: e.value for name, e in entries.items() if e.source == 1 and e.value is not None}


def alter_configs(bootstrap: str, topic: str, set_: dict[str, str], delete: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in set_.items()
    ] + [ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE) for name in delete]
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def partitions_of(bootstrap: str, topic: str) -> int | None:
    return topic_partitions(AdminClient({"bootstrap.servers": bootstrap})).get(topic)


def test_remote_topic_is_created_with_partitions_and_allowed_configs_when_missing(
    kafka, make_sync, unique_name
):
    topic = kafka.create_topic(
        "primary", unique_name("orders"), partitions=3, config=SOURCE_CONFIGS
    )
    remote = f"primary.{topic}"
    kafka.created.append(("backup", remote))
    sync = make_sync()

    assert sync.ensure_remote_topics({topic: 3}) == [
        f"created backup:{remote} (3 partitions, 3 configs)"
    ], "a missing remote topic is created once, with the source's copyable configs"
    copied = eventually(
        lambda: topic_level_configs(kafka["backup"], remote),
        lambda found: "<unknown topic>" not in found,
        f"backup:{remote} is described",
    )
    assert copied == {
        "retention.ms": "3600000",
        "cleanup.policy": "compact",
        "max.message.bytes": "2000000",
    }, "min.insync.replicas is excluded by MM2's default config.properties.exclude"
    assert partitions_of(kafka["backup"], remote) == 3, "source partition count is kept"
    assert sync.ensure_remote_topics({topic: 3}) == [], "a second round has nothing to do"


def test_user_config_properties_exclude_replaces_the_defaults_when_set(
    kafka, make_sync, unique_name
):
    topic = kafka.create_topic("primary", unique_name("orders"), config=SOURCE_CONFIGS)
    remote = f"primary.{topic}"
    kafka.created.append(("backup", remote))
    sync = make_sync(**{"config.properties.exclude": [r"retention\.ms"]})

    sync.ensure_remote_topics({topic: 1})
    copied = eventually(
        lambda: topic_level_configs(kafka["backup"], remote),
        lambda found: "<unknown topic>" not in found,
        f"backup:{remote} is described",
    )
    assert copied == {
        "cleanup.policy": "compact",
        "max.message.bytes": "2000000",
        "min.insync.replicas": "1",
    }, "the user's exclude list holds back retention.ms and no longer min.insync.replicas"


def test_remote_partitions_grow_but_never_shrink_when_the_source_grows(
    kafka, make_sync, unique_name
):
    topic = kafka.create_topic("primary", unique_name("orders"), partitions=2)
    remote = f"primary.{topic}"
    kafka.created.append(("backup", remote))
    sync = make_sync()
    sync.ensure_remote_topics({topic: 2})
    eventually(lambda: partitions_of(kafka["backup"], remote), lambda n: n == 2, "2 partitions")

    increase_partitions(AdminClient({"bootstrap.servers": kafka["primary"]}), topic, 4)
    counts = eventually(
        lambda: sync.replicated_topics(), lambda found: found.get(topic) == 4, "source shows 4"
    )
    assert sync.ensure_remote_topics({topic: counts[topic]}) == [
        f"grew backup:{remote} from 2 to 4 partitions"
    ], "a remote topic grows to the source's partition count"
    eventually(lambda: partitions_of(kafka["backup"], remote), lambda n: n == 4, "4 partitions")
    assert sync.ensure_remote_topics({topic: 1}) == [], "a remote topic never shrinks"
    assert partitions_of(kafka["backup"], remote) == 4, "still 4 partitions after a smaller ask"


def test_sync_configs_sets_changed_and_deletes_defaulted_configs_when_the_source_changes(
    kafka, make_sync, unique_name
):
    topic = kafka.create_topic(
        "primary",
        unique_name("orders"),
        config={"retention.ms": "1000000", "segment.ms": "600000", "cleanup.policy": "compact"},
    )
    remote = f"primary.{topic}"
    kafka.created.append(("backup", remote))
    sync = make_sync()
    sync.ensure_remote_topics({topic: 1})
    eventually(
        lambda: topic_level_configs(kafka["backup"], remote),
        lambda found: "segment.ms" in found,
        f"backup:{remote} has its copied configs",
    )
    assert sync.sync_configs([topic]) == [], "a freshly created remote topic is in sync"

    # Excluded on both sides: set on the source, and an override only the target has.
    alter_configs(kafka["backup"], remote, {"unclean.leader.election.enable": "true"}, [])
    alter_configs(
        kafka["primary"],
        topic,
        {"retention.ms": "2000000", "min.insync.replicas": "1"},
        ["segment.ms"],
    )
    eventually(
        lambda: topic_level_configs(kafka["primary"], topic),
        lambda found: "segment.ms" not in found,
        "the source change is visible",
    )

    assert sync.sync_configs([topic]) == [
        f"synced configs of backup:{remote}: set retention.ms=2000000; deleted segment.ms"
    ], "the changed value is SET and the source default DELETEs the override"
    assert topic_level_configs(kafka["backup"], remote) == {
        "retention.ms": "2000000",
        "cleanup.policy": "compact",
        "unclean.leader.election.enable": "true",
    }, "excluded properties are untouched on the target, and never copied from the source"
    assert sync.sync_configs([topic]) == [], "a second sync has nothing to do"


def test_replicated_topics_leaves_out_filtered_internal_and_cycled_topics_when_listed(
    kafka, make_sync, unique_name
):
    token = unique_name("t")
    wanted = kafka.create_topic("primary", f"orders-{token}", partitions=2)
    copied_back = kafka.create_topic("primary", f"backup.orders-{token}")  # came from backup
    kafka.create_topic("primary", f"payments-{token}")  # not in topics
    kafka.create_topic("primary", f"orders-{token}.internal")  # topics.exclude default
    kafka.create_topic("primary", f"__orders-{token}")  # internal
    sync = make_sync(topics=["orders-.*", r"backup\.orders-.*"])

    found = {t: n for t, n in sync.replicated_topics().items() if token in t}
    assert found == {wanted: 2}, (
        f"only {wanted} is copied: others are unlisted, internal or copies from backup"
        f" ({copied_back} would loop back)"
    )


def test_identity_policy_keeps_the_topic_name_when_configured(kafka, make_sync, unique_name):
    topic = kafka.create_topic("primary", unique_name("orders"), partitions=2)
    kafka.created.append(("backup", topic))
    sync = make_sync(**{"replication.policy.class": IDENTITY})

    assert sync.remote_topic(topic) == topic, "IdentityReplicationPolicy keeps names"
    assert sync.replicated_topics().get(topic) == 2, "the topic is replicated under its name"
    assert sync.ensure_remote_topics({topic: 2}) == [
        f"created backup:{topic} (2 partitions, 0 configs)"
    ], "the remote topic has the source topic's name"
    eventually(lambda: partitions_of(kafka["backup"], topic), lambda n: n == 2, "2 partitions")


def test_creation_fails_with_one_clear_message_when_replication_factor_is_too_high(
    kafka, make_sync, unique_name
):
    topic = kafka.create_topic("primary", unique_name("orders"))
    remote = f"primary.{topic}"
    kafka.created.append(("backup", remote))
    sync = make_sync(**{"replication.factor": 3})

    with pytest.raises(TopicSyncError) as raised:
        sync.ensure_remote_topics({topic: 1})
    message = str(raised.value)
    assert f"backup:{remote}" in message and "replication.factor 3" in message, (
        f"the error names the remote topic and the setting to check: {message}"
    )
    assert "Traceback" not in message and raised.value.changes == [], "one message, no changes"
