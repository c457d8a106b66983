"""Kafka topic ids as SRM reads them, and what a broker without them means.

A topic id (KIP-516) tells a deleted and recreated topic from the one SRM copied or
logged to: the copy's progress records the ids of its source and remote topic, and the
event log's readers check the events topic's id. Brokers before Kafka 2.8 have none: the
metadata answer carries the zero id (``AAAAAAAAAAAAAAAAAAAAAA`` in Kafka's base64), the
same for every topic, so a recreated topic would look like the old one. Rather than copy
on with that check silently off, SRM stops with :func:`checked_topic_id`'s message.
"""

from __future__ import annotations

from srm_common.errors import SrmError

ZERO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"
"""Kafka's ``Uuid.ZERO_UUID`` in base64: "this broker gave no topic id"."""


class NoTopicIdsError(SrmError):
    """The cluster gives topics no id (Kafka before 2.8)."""


def checked_topic_id(topic: str, topic_id: str, where: str = "the cluster") -> str:
    """``topic_id``, or NoTopicIdsError when the broker gave the zero id."""
    if topic_id == ZERO_TOPIC_ID:
        raise NoTopicIdsError(
            f"{where} gives topic {topic!r} no topic id (a Kafka broker before 2.8): SRM needs"
            " topic ids to tell a recreated topic from the one it copied; upgrade the"
            " cluster to Kafka 2.8 or later (docs/compatibility.md)"
        )
    return topic_id
