"""The remote topics of the partitions a driver copies for one flow: created before the
first copy, grown with their source, configs synced (MM2's rules, :mod:`topic_sync`).

Only partitions whose remote topic is ready are handed to copying; the others are tried
again with a backoff, so one topic the target refuses (a policy, a quota) holds up only
itself.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Mapping

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from srm_common.config.model import FlowConfig

from srm_driver.kafka_admin import KafkaAdminError, topic_partitions
from srm_driver.topic_sync import TopicSync, TopicSyncError

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
RETRY_SECONDS = 5.0
ROUND_TRIP_EVERY_S = 60.0
ROUND_TRIP_SAMPLES = 5


class FlowTopics:
    """Keeps the remote topics of one flow's owned partitions in step with the source."""

    def __init__(
        self, flow: FlowConfig, source_admin: AdminClient, target_admin: AdminClient
    ) -> None:
        self.flow = flow
        self._source_admin = source_admin
        self._target_admin = target_admin
        self._sync = TopicSync(flow, source_admin, target_admin)
        self._ready: dict[str, int] = {}  # source topic -> partitions its remote topic has
        self._retry_at = 0.0
        self._next_config_sync = time.monotonic() + flow.sync_topic_configs_interval_seconds
        self._next_refresh = 0.0
        # The last answer of :meth:`ready`, for which owned set; stale once the remote
        # topics' counts changed.
        self._owned: frozenset[TopicPartition] = frozenset()
        self._missing = False
        self._result: Mapping[TopicPartition, str] = {}
        self._result_for: frozenset[TopicPartition] | None = None
        self._stale = True
        self._next_round_trip = 0.0
        self._round_trips: deque[float] = deque(maxlen=ROUND_TRIP_SAMPLES)  # ms

    def remote_topic(self, topic: str) -> str:
        return self._sync.remote_topic(topic)

    def ready(self, owned: frozenset[TopicPartition]) -> Mapping[TopicPartition, str]:
        """The owned partitions whose remote partition exists, upstream -> remote topic.

        Creates or grows remote topics for owned partitions that have none yet, at most
        every few seconds while that fails. The same mapping object is returned as long
        as ``owned`` (the same object) and the remote topics did not change, so a caller
        can tell a change by identity, and a pass over 10,000 partitions that changed
        nothing costs nothing."""
        now = time.monotonic()
        if owned is not self._owned or self._stale:
            self._owned = owned
            self._missing = any(self._ready.get(topic, 0) <= p for topic, p in owned)
        refresh = now >= self._next_refresh
        if (self._missing or refresh) and now >= self._retry_at:
            self._ensure({topic for topic, _ in owned})
            interval = self.flow.refresh_topics_interval_seconds
            self._next_refresh = now + (interval if self.flow.refresh_topics_enabled else 1e12)
            self._missing = any(self._ready.get(topic, 0) <= p for topic, p in owned)
        self._maybe_sync_configs(now)
        if self._stale or self._result_for is not owned:
            self._result = {
                tp: self.remote_topic(tp[0]) for tp in owned if self._ready.get(tp[0], 0) > tp[1]
            }
            self._result_for = owned
            self._stale = False
        return self._result

    def _ensure(self, topics: set[str]) -> None:
        try:
            counts = topic_partitions(self._source_admin)
            wanted = {topic: counts[topic] for topic in topics if topic in counts}
            for change in self._sync.ensure_remote_topics(wanted):
                log.info("%s: %s", self.flow.name, change)
            # Topics whose remote topic existed already (a restart) were not described.
            self._sync.learn_record_limits(wanted)
        except TopicSyncError as exc:
            for change in exc.changes:
                log.info("%s: %s", self.flow.name, change)
            log.error("%s: %s (retrying in %.0f s)", self.flow.name, exc, RETRY_SECONDS)
            self._retry_at = time.monotonic() + RETRY_SECONDS
        except KafkaAdminError as exc:
            log.error("%s: %s (retrying in %.0f s)", self.flow.name, exc, RETRY_SECONDS)
            self._retry_at = time.monotonic() + RETRY_SECONDS
            return
        try:
            remote = topic_partitions(self._target_admin)
        except KafkaAdminError as exc:
            log.error("%s: %s", self.flow.name, exc)
            return
        ready = {topic: remote.get(self.remote_topic(topic), 0) for topic in topics}
        if ready != self._ready:
            self._ready = ready
            self._stale = True

    def _maybe_sync_configs(self, now: float) -> None:
        if not self.flow.sync_topic_configs_enabled or now < self._next_config_sync:
            return
        self._next_config_sync = now + self.flow.sync_topic_configs_interval_seconds
        try:
            changes = self._sync.sync_configs(self._ready)
        except TopicSyncError as exc:
            changes = exc.changes
            log.error("%s: %s (retrying next sync)", self.flow.name, exc)
        except KafkaAdminError as exc:
            changes = []
            log.error("%s: %s (retrying next sync)", self.flow.name, exc)
        for change in changes:
            log.info("%s: %s", self.flow.name, change)

    def largest_record_bytes(self) -> int:
        """The largest ``max.message.bytes`` among the flow's source topics described so
        far (0: none yet): the record size its copy's clients must carry."""
        return max(self._sync.record_limits.values(), default=0)

    def round_trip_ms(self) -> float | None:
        """About the round trip to the source: the shortest of the last few one-topic
        metadata requests, one every minute (None until one answered). The copy's fetch
        sizes follow it (copying.clients.sized_for_round_trip)."""
        now = time.monotonic()
        if now >= self._next_round_trip and self._ready:
            self._next_round_trip = now + ROUND_TRIP_EVERY_S
            topic = next(iter(self._ready))
            started = time.perf_counter()
            try:
                self._source_admin.list_topics(topic, timeout=10)
            except KafkaException:
                return min(self._round_trips) if self._round_trips else None
            self._round_trips.append((time.perf_counter() - started) * 1000)
        return min(self._round_trips) if self._round_trips else None

    def ready_counts(self) -> Mapping[str, int]:
        return dict(self._ready)
