"""The remote topics of the partitions a driver copies for one flow: created before the
first copy, grown with their source, configs synced (MM2's rules, :mod:`topic_sync`).

Only partitions whose remote topic is ready are handed to copying; the others are tried
again with a backoff, so one topic the target refuses (a policy, a quota) holds up only
itself.

Work follows what changed, not what exists. Every ``refresh.topics.interval.seconds``
(or, after a slow one, :data:`REFRESH_REST` times its length) every owned topic is looked
at on both clusters (a remote topic deleted, a source topic grown). In between, a pass
costs nothing unless some owned partition's remote topic is not ready: then only those
topics are looked at, by name (:mod:`topic_listing`), at most every
:data:`LOOK_EVERY_S`. A remote topic the target has but does not list yet
(created a moment ago, by this driver or another: a broker loading thousands of new
partitions shows later topics minutes after their creation), or lists with a transient
error, is taken to exist for :data:`TRUST_PRESENT_S`: it is looked at, not created or
grown again (each attempt was answered "already exists", every few seconds, with
three listings of the whole cluster each time).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Mapping

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from srm_common.config.model import FlowConfig

from srm_driver.kafka_admin import KafkaAdminError
from srm_driver.topic_listing import TopicListing, list_topics_of
from srm_driver.topic_sync import TopicSync, TopicSyncError

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
RETRY_SECONDS = 5.0
# Remote topics not ready for the owned partitions are looked at again this often (and
# this soon after this driver created or grew some).
LOOK_EVERY_S = 2.0
LOOK_AFTER_CHANGE_S = 0.5
# A remote topic the target has but does not list (yet) is not sent again for this long.
TRUST_PRESENT_S = 60.0
ROUND_TRIP_EVERY_S = 60.0
ROUND_TRIP_SAMPLES = 5
# A refresh or config sync that took this long is logged (_log_slow).
SLOW_PASS_S = 5.0
# The next refresh of every owned topic comes no sooner than this many times the last
# one's length after it (nor sooner than the interval): at most a fifth of the time.
REFRESH_REST = 4.0
# Changes of one round logged a line each at INFO; the rest at DEBUG (log_changes).
LISTED_CHANGES = 20


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
        # Source topic -> until when its remote topic, not listed (yet) as the owned
        # partitions need it, is taken to exist (see the module docstring).
        self._present: dict[str, float] = {}
        self._retry_at = 0.0
        self._look_at = 0.0
        self._next_config_sync = time.monotonic() + flow.sync_topic_configs_interval_seconds
        self._next_refresh = 0.0
        # The owned set last given, the partitions it needs per topic (highest + 1), and
        # its topics whose remote topic is not ready for it.
        self._owned: frozenset[TopicPartition] = frozenset()
        self._needed: dict[str, int] = {}
        self._missing: set[str] = set()
        # The last answer of :meth:`ready`, for which owned set; stale once the remote
        # topics' counts changed.
        self._result: Mapping[TopicPartition, str] = {}
        self._result_for: frozenset[TopicPartition] | None = None
        self._stale = True
        self._next_round_trip = 0.0
        self._round_trips: deque[float] = deque(maxlen=ROUND_TRIP_SAMPLES)  # ms

    def remote_topic(self, topic: str) -> str:
        return self._sync.remote_topic(topic)

    def ready(self, owned: frozenset[TopicPartition]) -> Mapping[TopicPartition, str]:
        """The owned partitions whose remote partition exists, upstream -> remote topic.

        Creates or grows remote topics for owned partitions that have none yet, looking
        at only those (see the module docstring). The same mapping object is returned as
        long as ``owned`` (the same object) and the remote topics did not change, so a
        caller can tell a change by identity, and a pass over 10,000 partitions that
        changed nothing costs nothing."""
        now = time.monotonic()
        if owned is not self._owned:
            self._owned = owned
            needed: dict[str, int] = {}
            for topic, partition in owned:
                if needed.get(topic, 0) <= partition:
                    needed[topic] = partition + 1
            self._needed = needed
            missing = self._missing_now()
            if missing - self._missing:
                self._look_at = 0.0  # topics not looked at for these partitions yet
            self._missing = missing
        if now >= self._next_refresh and now >= self._retry_at:
            self._ensure(set(self._needed), now, everything=True)
            # From the refresh's end, and at least REFRESH_REST times its length: at 30,000
            # partitions one refresh on loaded brokers (3,000 topics listed on both
            # clusters, every partition built into a Python object under the GIL) took
            # 5-33 s, and at a 10 s interval the listings ran almost back to back, taking
            # the brokers' and the driver's time from the copy. New topics do not wait for
            # it: they come as owned partitions whose remote topics are missing (below).
            ended = time.monotonic()
            took = ended - now
            _log_slow(self.flow.name, "refresh of", len(self._needed), took)
            interval = self.flow.refresh_topics_interval_seconds
            rest = max(interval, REFRESH_REST * took)
            self._next_refresh = ended + (rest if self.flow.refresh_topics_enabled else 1e12)
        elif self._missing and now >= max(self._look_at, self._retry_at):
            self._ensure(self._missing, now, everything=False)
        self._maybe_sync_configs(now)
        if self._stale or self._result_for is not owned:
            self._result = {
                tp: self.remote_topic(tp[0]) for tp in owned if self._ready.get(tp[0], 0) > tp[1]
            }
            self._result_for = owned
            self._stale = False
        return self._result

    def _missing_now(self) -> set[str]:
        return {topic for topic, n in self._needed.items() if self._ready.get(topic, 0) < n}

    def _ensure(self, topics: set[str], now: float, *, everything: bool) -> None:
        """Look at the remote topics of ``topics`` (``everything``: all owned ones, to
        follow the source; else those not ready), then create or grow what needs it."""
        self._look_at = now + LOOK_EVERY_S
        remote_of = {topic: self.remote_topic(topic) for topic in topics}
        try:
            remote = list_topics_of(self._target_admin, remote_of.values())
        except KafkaAdminError as exc:
            log.error("%s: %s (retrying in %.0f s)", self.flow.name, exc, RETRY_SECONDS)
            self._retry_at = now + RETRY_SECONDS
            return
        listed = {t: remote.counts[r] for t, r in remote_of.items() if r in remote.counts}
        for topic, name in remote_of.items():
            if name in remote.unsettled:
                self._present[topic] = now + TRUST_PRESENT_S
        ready = dict(self._ready) if not everything else {}
        for topic, name in remote_of.items():
            # Listed with a transient error: it stays as it was last listed (its
            # partitions copying are not let go for a moment's metadata).
            unsettled = name in remote.unsettled
            ready[topic] = self._ready.get(topic, 0) if unsettled else listed.get(topic, 0)
        ready = {topic: count for topic, count in ready.items() if count}
        if ready != self._ready:
            self._ready = ready
            self._stale = True
        self._present = {t: until for t, until in self._present.items() if until > now}
        # Not listed but known to exist: only looked at (a listed one that is smaller
        # than the owned partitions need is grown, however new).
        candidates = {
            topic
            for topic in topics
            if (everything or listed.get(topic, 0) < self._needed.get(topic, 0))
            and (topic in listed or topic not in self._present)
        }
        if candidates:
            self._create_or_grow(candidates, remote, now)
        self._missing = self._missing_now()

    def _create_or_grow(self, topics: set[str], remote: TopicListing, now: float) -> None:
        """Create the remote topics of ``topics`` the target does not have and grow those
        smaller than their source (:meth:`TopicSync.ensure_remote_topics`, with the
        target's listing ``remote``); remember those the target has from now on, and
        look at what changed again soon."""
        topic_of = {self.remote_topic(topic): topic for topic in topics}
        changes: list[str] = []
        failed: KafkaAdminError | None = None
        try:
            counts = list_topics_of(self._source_admin, topics).counts
            wanted = {topic: counts[topic] for topic in topics if topic in counts}
            try:
                changes = self._sync.ensure_remote_topics(wanted, remote)
            finally:
                for name in self._sync.present:
                    self._present[topic_of.get(name, name)] = now + TRUST_PRESENT_S
            # Topics whose remote topic existed already (a restart) were not described.
            self._sync.learn_record_limits(wanted)
        except TopicSyncError as exc:
            changes, failed = exc.changes, exc
        except KafkaAdminError as exc:
            failed = exc
        log_changes(self.flow.name, changes)
        if failed is not None:
            log.error("%s: %s (retrying in %.0f s)", self.flow.name, failed, RETRY_SECONDS)
            self._retry_at = now + RETRY_SECONDS
        if changes:
            self._look_at = min(self._look_at, now + LOOK_AFTER_CHANGE_S)

    def _maybe_sync_configs(self, now: float) -> None:
        if not self.flow.sync_topic_configs_enabled or now < self._next_config_sync:
            return
        interval = self.flow.sync_topic_configs_interval_seconds
        self._next_config_sync = now + interval  # (from its end, below, if it ends)
        started = time.monotonic()
        try:
            changes = self._sync.sync_configs(self._ready)
        except TopicSyncError as exc:
            changes = exc.changes
            log.error("%s: %s (retrying next sync)", self.flow.name, exc)
        except KafkaAdminError as exc:
            changes = []
            log.error("%s: %s (retrying next sync)", self.flow.name, exc)
        log_changes(self.flow.name, changes)
        ended = time.monotonic()
        _log_slow(self.flow.name, "config sync of", len(self._ready), ended - started)
        self._next_config_sync = ended + interval

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


def _log_slow(flow: str, what: str, topics: int, seconds: float) -> None:
    """A pass over the flow's topics that took :data:`SLOW_PASS_S` or more, at INFO: where
    a flow's time goes at scale (its other remote topics wait meanwhile)."""
    if seconds >= SLOW_PASS_S:
        log.info("%s: %s %d topics took %.1f s", flow, what, topics, seconds)


def log_changes(flow: str, changes: list[str]) -> None:
    """Each change on a line of its own, up to :data:`LISTED_CHANGES`; past that (a cold
    start of thousands of remote topics: a line each buried the driver's status lines) the
    first ones, then one line with how many more, and those at DEBUG."""
    for change in changes[:LISTED_CHANGES]:
        log.info("%s: %s", flow, change)
    rest = changes[LISTED_CHANGES:]
    if rest:
        log.info("%s: and %d more changes like these (listed at DEBUG)", flow, len(rest))
        for change in rest:
            log.debug("%s: %s", flow, change)
