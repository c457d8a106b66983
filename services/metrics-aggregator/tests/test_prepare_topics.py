"""The aggregator's topics prepared before Faust starts: a raw topic listed half-created
(an error, no partitions, no leader) is waited for, never counted as 0 partitions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from srm_common.metrics.aggregate import AGGREGATED_TOPIC, DEAD_TOPIC
from srm_common.metrics.raw import RAW_TOPIC
from srm_metrics_aggregator.app import prepare_topics
from srm_metrics_aggregator.settings import aggregator_settings

from .test_settings import config


@dataclass
class Part:
    leader: int


@dataclass
class Topic:
    partitions: dict[int, Part]
    error: Any = None


@dataclass
class Metadata:
    topics: dict[str, Topic]
    brokers: dict[int, object] = field(default_factory=lambda: {1: object()})


class HalfCreated:
    """An admin whose raw topic shows up in steps: listed with an error, then with a
    partition without a leader, then whole. The aggregator's own topics exist."""

    def __init__(self, steps: list[Topic | None]) -> None:
        self.steps = steps
        self.created: list[str] = []

    def list_topics(self, topic: str | None = None, timeout: float = 0) -> Metadata:
        settings = aggregator_settings(config(), "backup")
        own = {
            settings.topic(n): Topic({0: Part(1)})
            for n in ("contributions", "raw-state", "merge-state")
        }
        own.update({n: Topic({0: Part(1)}) for n in _OTHERS})
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        return Metadata({**own, **({RAW_TOPIC: step} if step is not None else {})})

    def create_topics(self, topics: list[Any]) -> dict[str, Any]:
        self.created.extend(t.topic for t in topics)

        class Done:
            def result(self, timeout: float) -> None:
                return None

        return {t.topic: Done() for t in topics}


_OTHERS = (AGGREGATED_TOPIC, DEAD_TOPIC)


def test_a_raw_topic_listed_half_created_is_waited_for() -> None:
    settings = aggregator_settings(config(), "backup")
    admin = HalfCreated(
        [
            None,  # not there: created
            Topic({}, error="LEADER_NOT_AVAILABLE"),
            Topic({0: Part(-1), 1: Part(1)}),
            Topic({0: Part(1), 1: Part(1), 2: Part(1)}),
        ]
    )
    partitions, factor = prepare_topics(settings, admin, timeout=10)  # type: ignore[arg-type]
    assert (partitions, factor) == (3, 2)
    assert admin.created == [RAW_TOPIC]


def test_a_raw_topic_that_never_gets_partitions_fails_with_its_name() -> None:
    settings = aggregator_settings(config(), "backup")
    admin = HalfCreated([Topic({}, error="LEADER_NOT_AVAILABLE")])
    with pytest.raises(TimeoutError, match=RAW_TOPIC):
        prepare_topics(settings, admin, timeout=0.1)  # type: ignore[arg-type]
