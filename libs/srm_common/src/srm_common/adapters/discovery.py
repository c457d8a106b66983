"""What a flow would copy now: the source's matching partitions and consumer groups.

The leader asks when it takes over, when srm-control changes a flow's lists, when a
driver reports a change, every ``refresh.topics.interval.seconds`` and every
``refresh.groups.interval.seconds``; one listing holds both, and the caller uses the half
that was due (:mod:`srm_common.control.refresh`). The rule is the replication plan's
(:func:`replicated_partitions`), applied to the flow as the event log has it.

Listing a cluster is slow when the cluster is down (up to :data:`TIMEOUT_S`), and that
is when it matters most: the primary site has failed, drivers are failing over and the
other flows still need their rounds. So listings are taken by one thread per source
cluster, never on the leader's loop. :meth:`Discovery.discover` answers from the newest
listing that started after the moment the leader needs (``fresh_after_ms``); until
there is one it asks for it and raises :class:`DiscoveryPending`, and the leader tries
again next round.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from srm_common.adapters import kafka_clients
from srm_common.config.model import FlowConfig
from srm_common.control.refresh import DiscoveryPending
from srm_common.domain.tasks import TopicPartition
from srm_common.errors import SrmError
from srm_common.replication_plan import replicated_partitions

log = logging.getLogger(__name__)

TIMEOUT_S = 15.0


class DiscoveryError(SrmError):
    """The source cluster of a flow could not be listed."""


@dataclass(frozen=True)
class Listing:
    """One cluster's topics (partition counts) and consumer groups, or why not."""

    started_ms: int
    counts: Mapping[str, int]
    groups: tuple[str, ...] = ()
    error: str | None = None
    # Listing groups failed (say, no Describe on groups): only flows that translate
    # group offsets care, topics are still known.
    groups_error: str | None = None

    def partitions(self, flow: FlowConfig) -> list[TopicPartition]:
        """Every partition of every source topic ``flow`` replicates, sorted."""
        return replicated_partitions(flow, self.counts)

    def matching_groups(self, flow: FlowConfig) -> list[str]:
        """Consumer groups the flow's group filter allows, sorted."""
        if not flow.emit_checkpoints_enabled or not flow.groups:
            return []
        if self.groups_error is not None:
            raise DiscoveryError(
                f"{flow.name}: cannot list groups of {flow.source}: {self.groups_error}"
            )
        allowed = flow.group_filter()
        return sorted(g for g in self.groups if allowed.matches(g))


Lister = Callable[[], tuple[Mapping[str, int], tuple[str, ...] | str]]


def _reason(exc: KafkaException) -> str:
    error = exc.args[0] if exc.args else None
    return error.str() if isinstance(error, KafkaError) else str(exc)


def admin_lister(admin_config: Mapping[str, str]) -> Lister:
    """Lists a cluster with an admin client, made at the first listing (on the watcher's
    thread: a setting librdkafka refuses is then that listing's error) and kept open.
    Groups are a tuple of ids, or why they could not be listed."""
    admins: list[AdminClient] = []

    def listing() -> tuple[Mapping[str, int], tuple[str, ...] | str]:
        try:
            if not admins:
                admins.append(kafka_clients.admin(dict(admin_config)))
            metadata = admins[0].list_topics(timeout=TIMEOUT_S)
        except KafkaException as exc:
            raise DiscoveryError(_reason(exc)) from exc
        counts = {
            name: len(topic.partitions)
            for name, topic in metadata.topics.items()
            if topic.error is None and topic.partitions
        }
        try:
            found = admins[0].list_consumer_groups(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
        except KafkaException as exc:
            return counts, _reason(exc)
        return counts, tuple(g.group_id for g in found.valid)

    return listing


class ClusterWatcher(threading.Thread):
    """Takes a listing of one cluster each time one is asked for, in the background."""

    def __init__(self, alias: str, lister: Lister, clock: Callable[[], float]) -> None:
        super().__init__(name=f"discovery {alias}", daemon=True)
        self.alias = alias
        self.lister = lister
        self.clock = clock
        self.latest: Listing | None = None
        self.closed = threading.Event()
        self._asked = threading.Event()
        self._lock = threading.Lock()
        self._taking_since: int | None = None

    def ask(self, fresh_after_ms: int) -> None:
        """Take a listing that starts at or after ``fresh_after_ms``."""
        with self._lock:
            taking = self._taking_since
            if taking is None or taking < fresh_after_ms:
                self._asked.set()

    def run(self) -> None:
        while not self.closed.is_set():
            if not self._asked.wait(0.5):
                continue
            with self._lock:  # one step, so that ask() sees either the request or this
                self._asked.clear()
                started = int(self.clock() * 1000)
                self._taking_since = started
            try:
                counts, groups = self.lister()
                if isinstance(groups, str):
                    self.latest = Listing(started, counts, groups_error=groups)
                else:
                    self.latest = Listing(started, counts, groups)
            except Exception as exc:  # noqa: BLE001 - reported to the leader, who retries
                self.latest = Listing(started, {}, (), str(exc) or type(exc).__name__)
            with self._lock:
                self._taking_since = None


class Discovery:
    """The leader's view of its source clusters; one :class:`ClusterWatcher` each."""

    def __init__(
        self,
        lister_for: Callable[[FlowConfig], Lister] = lambda flow: admin_lister(flow.source_admin),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lister_for = lister_for
        self._clock = clock
        self._watchers: dict[tuple[str, frozenset[tuple[str, str]]], ClusterWatcher] = {}

    def discover(
        self, flow: FlowConfig, fresh_after_ms: int
    ) -> tuple[list[TopicPartition], list[str]]:
        """The flow's partitions and groups, from a listing started at or after
        ``fresh_after_ms``; :class:`DiscoveryPending` while there is none,
        :class:`DiscoveryError` if that listing failed."""
        # Per cluster and client settings: flows may reach one cluster as different
        # principals (S->T.source.admin.* overrides), who may see different topics.
        key = (flow.source, frozenset(flow.source_admin.items()))
        watcher = self._watchers.get(key)
        if watcher is None:
            watcher = ClusterWatcher(flow.source, self._lister_for(flow), self._clock)
            self._watchers[key] = watcher
            watcher.start()
        listing = watcher.latest
        if listing is None or listing.started_ms < fresh_after_ms:
            watcher.ask(fresh_after_ms)
            raise DiscoveryPending(flow.source)
        if listing.error is not None:
            raise DiscoveryError(f"{flow.name}: cannot list {flow.source}: {listing.error}")
        return listing.partitions(flow), listing.matching_groups(flow)

    def close(self) -> None:
        for watcher in self._watchers.values():
            watcher.closed.set()
