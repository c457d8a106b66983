"""Leader election through Kafka's group protocol.

Every coordinator joins one consumer group on a one-partition topic; the member that
holds the partition leads. A leader that dies stops heartbeating the group and the
broker hands the partition to a standby after ``session.timeout.ms``. Election alone
does not stop a paused old leader from writing: the new leader's transactional init
does (see :mod:`srm_common.adapters.event_log_writer`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException
from srm_common.config.control import ControlSettings

log = logging.getLogger(__name__)

SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms default


def consumer_config(settings: ControlSettings, member: str) -> dict[str, Any]:
    """The keys of ``member``'s consumer in the election group of ``settings``' log (the
    composition root builds it)."""
    return {
        **settings.client,
        "group.id": settings.election_group,
        "client.id": member,
        "session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "heartbeat.interval.ms": "1000",
        "max.poll.interval.ms": "300000",
        "enable.auto.commit": "false",
        # Cooperative: a standby joining does not make the leader give the
        # partition up (an eager assignor revokes it at every rebalance).
        "partition.assignment.strategy": "cooperative-sticky",
    }


class LeaderElection(threading.Thread):
    """Polls the election group through ``consumer`` (made from :func:`consumer_config`)
    on ``topic``; ``leading`` is set while this member holds the partition."""

    def __init__(self, consumer: Consumer, topic: str, stop: threading.Event) -> None:
        super().__init__(name="election", daemon=True)
        self.leading = threading.Event()
        self.changed = threading.Event()
        self._stopping = stop
        self._consumer = consumer
        self._topic = topic

    def run(self) -> None:
        self._consumer.subscribe(
            [self._topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        try:
            while not self._stopping.is_set():
                try:
                    self._consumer.poll(0.2)
                except KafkaException as exc:
                    log.warning("election: %s", exc)
        finally:
            self._set(False)
            try:
                self._consumer.close()  # leaves the group: a standby takes over at once
            except KafkaException:
                pass

    def _on_assign(self, _consumer: Consumer, partitions: list) -> None:
        # Incremental: only what is added now (empty when a standby joins).
        if partitions:
            self._set(True)

    def _on_revoke(self, _consumer: Consumer, partitions: list) -> None:
        if partitions:
            self._set(False)

    def _on_lost(self, _consumer: Consumer, _partitions: list) -> None:
        self._set(False)

    def _set(self, leading: bool) -> None:
        if leading != self.leading.is_set():
            (self.leading.set if leading else self.leading.clear)()
            self.changed.set()


class Candidacy:
    """Takes part in the election only while :meth:`allow` says so: a coordinator that
    cannot lead the event log (lost, or written by a newer SRM) leaves the group, so that
    one that can may lead, and drivers see that nobody leads (their lease rule).
    ``consumer()`` makes the consumer of each new election (the composition root's)."""

    def __init__(self, member: str, *, topic: str, consumer: Callable[[], Consumer]) -> None:
        self._member = member
        self._topic = topic
        self._consumer = consumer
        self._election: LeaderElection | None = None
        self._stop = threading.Event()

    @property
    def leading(self) -> bool:
        return self._election is not None and self._election.leading.is_set()

    def allow(self, allowed: bool) -> None:
        if allowed and self._election is None:
            self._stop = threading.Event()
            self._election = LeaderElection(self._consumer(), self._topic, self._stop)
            self._election.start()
        elif not allowed and self._election is not None:
            log.warning("%s: leaving the election", self._member)
            self.close()

    def close(self) -> None:
        self._stop.set()
        if self._election is not None:
            self._election.join(10)
        self._election = None
