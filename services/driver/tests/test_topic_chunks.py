"""Remote topics created, grown and reconfigured in requests a KRaft controller accepts:
cut under ``srm.admin.max.records``, and a request the controller refuses as too large
split and sent again (a fake controller with KRaft's rule; against real brokers,
thousands of topics at once: ``make bench-scale``, docs/benchmark.md)."""

from __future__ import annotations

import logging
from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import ConfigEntry, ConfigResource, NewTopic
from srm_common.config import parse_yaml_text
from srm_driver.testing import FakeController, done_future, failed_future
from srm_driver.topic_sync import TopicSync

# Kafka 4.1.1's two refusals (POLICY_VIOLATION): too many records, too many partitions.
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."


def flow(extra: str = ""):  # noqa: ANN201 - a FlowConfig
    config = parse_yaml_text(
        "clusters:\n  primary: {bootstrap.servers: 'p:9'}\n  backup: {bootstrap.servers: 'b:9'}\n"
        f"flows:\n  primary->backup: {{enabled: true, topics: 'scale.*'{extra}}}\n"
    )
    return config.flow("primary", "backup")


def source_with(topics: int, partitions: int) -> FakeController:
    source = FakeController()
    source.topics = {f"scale.t{i:04d}": partitions for i in range(topics)}
    return source


def test_a_thousand_topics_of_ten_partitions_go_in_requests_under_the_limit() -> None:
    source, target = source_with(1000, 10), FakeController()
    sync = TopicSync(flow(), source, target)  # type: ignore[arg-type]

    changes = sync.ensure_remote_topics(source.topics)

    assert len(changes) == 1000
    assert target.topics == {f"primary.{t}": 10 for t in source.topics}
    assert [records for _what, _items, records in target.requests] == [9999, 1001]
    assert all(records <= 10_000 for _what, _items, records in target.requests)


@pytest.mark.parametrize("refusal", [TOO_MANY_RECORDS, TOO_MANY_PARTITIONS])
def test_a_create_topics_the_broker_refuses_as_too_large_is_split_and_sent_again(
    refusal: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The controller caps at 2,500 records while the configuration says 10,000 (a broker
    # with a lower cap, or records counted otherwise): the request is refused whole.
    source, target = source_with(300, 10), FakeController(cap=2500, refusal=refusal)
    sync = TopicSync(flow(), source, target)  # type: ignore[arg-type]

    with caplog.at_level(logging.INFO):
        changes = sync.ensure_remote_topics(source.topics)

    assert len(changes) == 300, "every topic is created, none is reported failed"
    assert target.topics == {f"primary.{t}": 10 for t in source.topics}
    sent = [records for _what, _items, records in target.requests]
    assert sent[0] == 3300, "first all in one request (under the configured limit)"
    assert sent[1:3] == [1650, 1650] and max(sent[1:]) <= 2500, "then its halves, accepted"
    assert "refused as too large" in caplog.text
    assert sync.budget.limit == 1650, "later requests stay under what was refused"


def test_halves_are_split_again_until_the_controller_takes_them() -> None:
    source, target = source_with(64, 10), FakeController(cap=100)
    sync = TopicSync(flow(), source, target)  # type: ignore[arg-type]

    changes = sync.ensure_remote_topics(source.topics)

    assert len(changes) == 64
    accepted = [r for r in target.requests if r[2] <= 100]
    assert sum(items for _what, items, _records in accepted) == 64, "each topic created once"


def test_a_topic_larger_than_one_request_is_created_then_grown_in_steps() -> None:
    source, target = FakeController(), FakeController()
    source.topics = {"scale.huge": 25_000}
    sync = TopicSync(flow(), source, target)  # type: ignore[arg-type]

    changes = sync.ensure_remote_topics(source.topics)

    assert target.topics == {"primary.scale.huge": 25_000}
    assert [(what, records) for what, _items, records in target.requests] == [
        ("create", 10_000),
        ("grow", 10_000),
        ("grow", 5_001),
    ]
    assert changes == [
        "created backup:primary.scale.huge (9999 partitions, 0 configs)",
        "grew backup:primary.scale.huge from 9999 to 25000 partitions",
    ]


def test_growing_many_topics_is_chunked_by_the_partitions_added() -> None:
    source, target = source_with(3000, 10), FakeController()
    target.topics = {f"primary.{t}": 4 for t in source.topics}
    sync = TopicSync(flow(), source, target)  # type: ignore[arg-type]

    changes = sync.ensure_remote_topics(source.topics)

    assert len(changes) == 3000 and set(target.topics.values()) == {10}
    assert [records for _what, _items, records in target.requests] == [9996, 8004]


def test_a_lower_configured_limit_cuts_smaller_requests() -> None:
    source, target = source_with(300, 10), FakeController()
    sync = TopicSync(flow(", srm.admin.max.records: 1000"), source, target)  # type: ignore[arg-type]

    sync.ensure_remote_topics(source.topics)

    assert len(target.requests) == 4 and all(r[2] <= 1000 for r in target.requests)
    assert len(target.topics) == 300


def test_a_topic_policy_refusing_one_topic_is_not_split_but_reported() -> None:
    source, target = source_with(20, 2), FakeController()
    original = target.create_topics

    def create_topics(new_topics: list[NewTopic], **kwargs: float) -> dict[str, Future[None]]:
        kept = [t for t in new_topics if t.topic != "primary.scale.t0007"]
        futures = original(kept, **kwargs)
        refusal = failed_future(KafkaError.POLICY_VIOLATION, "Topic name is not allowed by policy")
        futures["primary.scale.t0007"] = refusal  # type: ignore[assignment]
        return futures

    target.create_topics = create_topics  # type: ignore[method-assign]
    sync = TopicSync(flow(), source, target)  # type: ignore[arg-type]

    with pytest.raises(Exception, match="t0007: Topic name is not allowed by policy"):
        sync.ensure_remote_topics(source.topics)
    assert len(target.requests) == 1 and len(target.topics) == 19
    assert sync.budget.limit == 10_000


class LimitsController(FakeController):
    """Describes each topic with its max.message.bytes (``limits``), counting requests."""

    def __init__(self, limits: dict[str, int]) -> None:
        super().__init__()
        self.limits = limits
        self.described: list[list[str]] = []

    def describe_configs(
        self, resources: list[ConfigResource], request_timeout: float = 0
    ) -> dict[ConfigResource, Future[dict[str, object]]]:
        self.described.append([r.name for r in resources])
        return {
            r: done_future(
                {"max.message.bytes": ConfigEntry("max.message.bytes", str(self.limits[r.name]))}
            )
            for r in resources
        }


def test_the_source_topics_record_limits_are_learned_from_its_describes_once() -> None:
    """Creating the remote topics describes the source: its limits are kept; topics whose
    remote topic already existed are described once, in one request; known ones never."""
    source = LimitsController({"scale.big": 22020096, "scale.old": 2097152, "scale.std": 1048588})
    source.topics = {"scale.big": 1, "scale.old": 1, "scale.std": 1}
    target = FakeController()
    target.topics = {"primary.scale.old": 1}
    sync = TopicSync(flow(), source, target)  # type: ignore[arg-type]
    sync.ensure_remote_topics(source.topics)
    assert sync.record_limits == {"scale.big": 22020096, "scale.std": 1048588}
    sync.learn_record_limits(source.topics)
    sync.learn_record_limits(source.topics)
    assert source.described[1:] == [["scale.old"]]
    assert max(sync.record_limits.values()) == 22020096
    assert sync.record_limits["scale.old"] == 2097152
