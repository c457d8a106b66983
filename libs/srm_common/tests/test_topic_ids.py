"""A broker without topic ids (before Kafka 2.8) is named, never copied past silently."""

from __future__ import annotations

import pytest
from confluent_kafka import Uuid
from srm_common.adapters.topic_ids import ZERO_TOPIC_ID, NoTopicIdsError, checked_topic_id


def test_zero_id_is_kafkas_zero_uuid_in_base64() -> None:
    assert str(Uuid(0, 0)) == ZERO_TOPIC_ID


def test_real_id_passes_and_zero_id_is_one_clear_line() -> None:
    assert checked_topic_id("orders", "x3Yq1kVrQ2KfzWk4yq0AAA") == "x3Yq1kVrQ2KfzWk4yq0AAA"
    with pytest.raises(NoTopicIdsError) as raised:
        checked_topic_id("orders", ZERO_TOPIC_ID, "cluster primary")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("cluster primary gives topic 'orders' no topic id")
    assert "upgrade the cluster to Kafka 2.8 or later" in message
