"""Which cluster gets each internal topic, with which replication factor, and when topic
configs are synced: the MM2 keys behind them, with Kafka's admin faked."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException
from srm_common.config import FlowConfig, parse_yaml_text
from srm_driver import bootstrap, flow_topics


def flow_with(**keys: object) -> FlowConfig:
    settings = "".join(f", {key}: {value}" for key, value in keys.items())
    config = parse_yaml_text(
        "clusters:\n"
        '  primary: {bootstrap.servers: "primary:9092"}\n'
        '  backup: {bootstrap.servers: "backup:9092"}\n'
        f"flows:\n  primary->backup: {{enabled: true{settings}}}\n"
    )
    return config.flow("primary", "backup")


class Created:
    """Fakes ``ensure_compacted_topic``: records (cluster, topic, replication factor)."""

    def __init__(self) -> None:
        self.topics: list[tuple[str, str, int]] = []

    def __call__(self, admin: Mapping[str, str], name: str, **options: int) -> bool:
        self.topics.append((admin["bootstrap.servers"], name, options["replication_factor"]))
        return True


class Writer:
    def __init__(self, topic: str, producer: Mapping[str, str], **_options: object) -> None:
        self.topic = topic
        self.cluster = producer["bootstrap.servers"]

    def close(self) -> None:
        pass


@pytest.fixture
def created(monkeypatch: pytest.MonkeyPatch) -> Created:
    created = Created()
    monkeypatch.setattr(bootstrap, "ensure_compacted_topic", created)
    monkeypatch.setattr(bootstrap, "admin_client", dict)  # the config stands for the client
    monkeypatch.setattr(bootstrap, "internal_writer", Writer)
    return created


def test_the_heartbeats_topic_gets_its_replication_factor(created: Created) -> None:
    bootstrap.heartbeat_task(flow_with(**{"heartbeats.topic.replication.factor": 2})).prepare()
    assert created.topics == [("backup:9092", "heartbeats", 2)]


@pytest.mark.parametrize(
    ("location", "cluster", "topic"),
    [
        ("source", "primary:9092", "mm2-offset-syncs.backup.internal"),
        ("target", "backup:9092", "mm2-offset-syncs.primary.internal"),
    ],
)
def test_offset_syncs_go_where_the_location_says_with_their_replication_factor(
    created: Created, monkeypatch: pytest.MonkeyPatch, location: str, cluster: str, topic: str
) -> None:
    class Store:
        def __init__(self, *_args: object, **_options: object) -> None:
            pass

        def ensure_topic(self) -> None:
            pass

    monkeypatch.setattr(bootstrap, "ProgressStore", Store)
    monkeypatch.setattr(bootstrap, "FlowFacts", lambda *_args: None)
    flow = flow_with(
        **{"offset-syncs.topic.location": location, "offset-syncs.topic.replication.factor": 1}
    )
    settings = SimpleNamespace(
        control=SimpleNamespace(write_timeout_ms=10_000), progress_topics={flow.name: (25, -1)}
    )
    adapters = bootstrap.flow_adapters(flow, settings)  # type: ignore[arg-type]
    assert created.topics == [(cluster, topic, 1)]
    assert (adapters.syncs.topic, adapters.syncs.cluster) == (topic, cluster)  # type: ignore[attr-defined]


class Sync:
    """Fakes TopicSync: records when configs were synced."""

    def __init__(self, now: list[float]) -> None:
        self.now = now
        self.synced: list[float] = []
        self.record_limits: dict[str, int] = {}

    def ensure_remote_topics(self, _wanted: Mapping[str, int]) -> list[str]:
        return []

    def learn_record_limits(self, _topics: Mapping[str, int]) -> None:
        return None

    def sync_configs(self, _ready: Mapping[str, int]) -> list[str]:
        self.synced.append(self.now[0])
        return []


@pytest.mark.parametrize("enabled", [True, False])
def test_topic_configs_are_synced_every_interval_unless_switched_off(
    monkeypatch: pytest.MonkeyPatch, enabled: bool
) -> None:
    now = [100.0]
    monkeypatch.setattr(flow_topics.time, "monotonic", lambda: now[0])
    flow = flow_with(
        **{
            "sync.topic.configs.enabled": str(enabled).lower(),
            "sync.topic.configs.interval.seconds": 30,
        }
    )
    topics = flow_topics.FlowTopics(flow, None, None)  # type: ignore[arg-type]
    sync = Sync(now)
    monkeypatch.setattr(topics, "_sync", sync)
    for at in (100.0, 129.0, 130.0, 159.0, 160.0):
        now[0] = at
        topics.ready(frozenset())
    assert sync.synced == ([130.0, 160.0] if enabled else [])


class TimedAdmin:
    """A source admin whose one-topic metadata requests take ``took`` seconds each
    (on the patched clock), or fail."""

    def __init__(self, clock: list[float], took: list[float]) -> None:
        self.clock = clock
        self.took = took
        self.asked: list[str] = []

    def list_topics(self, topic: str, timeout: float) -> None:
        self.asked.append(topic)
        took = self.took.pop(0)
        if took < 0:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))
        self.clock[0] += took


def test_the_round_trip_to_the_source_is_the_shortest_recent_metadata_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One small request a minute, none before a remote topic is ready; the shortest of
    the last five (a slow answer is queueing, not distance); a failure keeps the last."""
    clock = [0.0]
    now = [1000.0]
    monkeypatch.setattr(flow_topics.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(flow_topics.time, "monotonic", lambda: now[0])
    admin = TimedAdmin(clock, [0.150, 0.400, -1, 0.160, 0.155, 0.151, 0.152, 0.153])
    topics = flow_topics.FlowTopics(flow_with(), admin, None)  # type: ignore[arg-type]
    assert topics.round_trip_ms() is None and admin.asked == [], "no topic ready yet"
    topics._ready = {"orders": 3}
    seen = []
    for minute in range(8):
        now[0] = 1000.0 + 60 * minute
        seen.append(topics.round_trip_ms())
        seen.append(topics.round_trip_ms())  # within the minute: no request
    assert admin.asked == ["orders"] * 8
    assert [round(ms) if ms else ms for ms in seen[::2]] == [150, 150, 150, 150, 150, 150, 151, 151]
