"""What a coordinator reads, writes, asks and times by: the ports :class:`Coordinator`
receives (:mod:`srm_coordinator.bootstrap` builds the Kafka ones; tests pass fakes).

Each port that holds a client is a factory: the coordinator opens a writer and a beat
reader at every take-over and closes them when it steps down.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from srm_common.config.model import FlowConfig
from srm_common.control.beats import Beat
from srm_common.control.events import Envelope
from srm_common.control.integrity import LogProblem
from srm_common.domain.tasks import TopicPartition

from srm_coordinator.migration import LegacyFactory


class Discoverer(Protocol):
    """What the leader lists sources with (:class:`srm_common.adapters.discovery.Discovery`)."""

    def discover(
        self, flow: FlowConfig, fresh_after_ms: int
    ) -> tuple[list[TopicPartition], list[str]]:
        """The flow's partitions and groups, from a listing started at or after
        ``fresh_after_ms``;
        :class:`srm_common.control.refresh.DiscoveryPending` while there is none."""
        ...

    def close(self) -> None: ...


class LogReader(Protocol):
    """The event log, read_committed
    (:class:`~srm_common.adapters.event_log_reader.EventLogReader`)."""

    problem: LogProblem | None
    position: int

    @property
    def topic_id(self) -> str | None: ...

    def read_to_end(self) -> list[Envelope]: ...
    def poll(self, timeout: float) -> list[Envelope]: ...
    def take_restart(self) -> bool: ...
    def status(self) -> dict[str, object]: ...
    def close(self) -> None: ...


class LogWriter(Protocol):
    """The leader's fencing writer
    (:class:`~srm_common.adapters.event_log_writer.EventLogWriter`)."""

    def fence(self) -> None: ...
    def append(self, envelopes: Sequence[Envelope]) -> list[Envelope]: ...
    def close(self) -> None: ...


class LogEnd(Protocol):
    """Where the event log ends now (:class:`~srm_common.adapters.event_log_end.EventLogEnd`)."""

    def query(self) -> int: ...
    def topic_id(self) -> str | None: ...


class Beats(Protocol):
    """Driver heartbeats (:class:`~srm_common.adapters.heartbeats.BeatReader`)."""

    def poll(self, timeout: float = 0) -> list[Beat]: ...
    def close(self) -> None: ...


class Election(Protocol):
    """This coordinator's candidacy (:class:`~srm_coordinator.election.Candidacy`)."""

    @property
    def leading(self) -> bool: ...
    def allow(self, allowed: bool) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class Adapters:
    """The factories a coordinator uses; arguments are what the Kafka adapters need.

    ``prepare(create_events)`` makes sure the control topics exist (the events topic is
    created only when ``create_events``); ``reader(client_id, known_log)``,
    ``writer(client_id)``, ``beats(client_id, since_ms)``, ``election(member)``,
    ``legacy()`` (the single log of an earlier release, to move from)."""

    prepare: Callable[[bool], None]
    reader: Callable[[str, str | None], LogReader]
    writer: Callable[[str], LogWriter]
    log_end: Callable[[], LogEnd]
    beats: Callable[[str, int], Beats]
    election: Callable[[str], Election]
    discovery: Callable[[], Discoverer]
    # The single log of an earlier release (srm_coordinator.migration); None: nothing
    # to move from (unit tests of other things).
    legacy: LegacyFactory | None = None
    clock: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
