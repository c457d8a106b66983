"""Where the committed event log ends now, which topic holds it and whether a
coordinator holds the election: what a driver asks before it trusts that it has read
every decision made before a moment.
"""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout

from confluent_kafka import (
    ConsumerGroupState,
    IsolationLevel,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import OffsetSpec

from srm_common.adapters import answering, kafka_clients
from srm_common.adapters.event_log_reader import UNKNOWN_TOPIC_ID, describe_topic_id
from srm_common.config.control import ControlSettings
from srm_common.errors import ControlLogError

# Failed looks in a row after which the admin client is built anew (EventLogEnd.query).
REBUILD_AFTER = 3


class EventLogEnd:
    """Where the committed event log ends now (its last stable offset), which topic holds
    it (its topic id), and whether a coordinator holds the election: for a driver
    confirming that it has read every decision made before a moment."""

    def __init__(self, settings: ControlSettings) -> None:
        self.topic = settings.events_topic
        self.election_topic = settings.election_topic
        self.election_group = settings.election_group
        self._client = dict(settings.client)
        self._admin = kafka_clients.admin(self._client)
        self._failures = 0

    def query(self, timeout: float = 5.0) -> int:
        """The end offset; :class:`ControlLogError` if the log's cluster did not answer.

        After a failed look the next one starts from fresh metadata: librdkafka finds the
        partition's leader in its metadata cache, and a broker fenced for a moment (its
        controller too slow to take its heartbeats) once left the partition without a
        leader there for ten minutes ("No leaders found") while the broker led it again,
        so the driver could not confirm its membership and its lease lapsed. The topic's
        metadata is asked for before the next look (``adapters/answering.py``, which
        also keeps a cluster that is down from costing a core), and after
        :data:`REBUILD_AFTER` failures in a row the client is built anew."""
        request = {TopicPartition(self.topic, 0): OffsetSpec.latest()}
        try:
            answering.check(self._admin, self.topic, timeout)
            futures = self._admin.list_offsets(
                request, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout
            )
            offset = int(next(iter(futures.values())).result(timeout).offset)
        except (KafkaException, FutureTimeout) as exc:
            self._after_failure()
            raise ControlLogError(f"cannot read where the event log ends: {exc}") from exc
        self._failures = 0
        return offset

    def _after_failure(self) -> None:
        self._failures += 1
        if self._failures % REBUILD_AFTER == 0:
            self._admin = kafka_clients.admin(self._client)
        answering.failed(self._admin)  # a new client too: it looks first as well

    def topic_id(self, timeout: float = 5.0) -> str | None:
        """The events topic's id now; None when it does not exist; ControlLogError when
        the log's cluster did not say."""
        topic_id = describe_topic_id(self._admin, self.topic, timeout)
        if topic_id == UNKNOWN_TOPIC_ID:
            raise ControlLogError("cannot describe the event log topic")
        return topic_id

    def someone_leads(self, timeout: float = 5.0) -> bool:
        """Whether a coordinator may lead now: a member of the election group holds the
        election partition, or the group is between assignments (True when unsure)."""
        try:
            group = (
                self._admin.describe_consumer_groups(
                    [self.election_group], request_timeout=timeout
                )[self.election_group]
            ).result(timeout)
        except (KafkaException, FutureTimeout):
            return True
        if group.state in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD):
            return False
        if group.state != ConsumerGroupState.STABLE:
            return True
        return any(
            tp.topic == self.election_topic
            for member in group.members
            for tp in (member.assignment.topic_partitions if member.assignment else [])
        )
