"""Fakes of a coordinator's ports (:class:`~srm_coordinator.ports.Adapters`) for unit
tests: the event log is the in-memory one of :mod:`srm_common.testing` (empty at first),
the writer appends to it and keeps what it appended, discovery lists nothing and nobody
is elected."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from srm_common.config.model import FlowConfig
from srm_common.control.events import Envelope
from srm_common.testing import InMemoryEventLog, InMemoryLogWriter

from srm_coordinator.migration import Migration
from srm_coordinator.ports import Adapters


class NoDiscovery:
    def discover(self, _flow: FlowConfig, _after: int) -> tuple[list[tuple[str, int]], list[str]]:
        return [], []

    def close(self) -> None:
        pass


class ListWriter(InMemoryLogWriter):
    """The in-memory log's writer, keeping what it appended in ``appended``.
    ``before_append`` runs first (a slow write), then ``error`` is raised if set."""

    def __init__(self, log: InMemoryEventLog) -> None:
        super().__init__(log)
        self.appended: list[Envelope] = []
        self.before_append: Callable[[], object] | None = None

    def append(self, envelopes: Sequence[Envelope]) -> list[Envelope]:
        if self.before_append is not None:
            self.before_append()
        written = super().append(envelopes)
        self.appended += written
        return written


class NoBeats:
    closed = False

    def poll(self, _timeout: float = 0) -> list[object]:
        return []

    def close(self) -> None:
        self.closed = True


class NeverElected:
    leading = False

    def allow(self, _allowed: bool) -> None:
        pass

    def close(self) -> None:
        pass


class FakeLegacyLog:
    """The single log of an earlier release: ``migration`` (None: no such log), read
    refused with ``error`` while set, ``marked`` records what was written into it."""

    def __init__(self, migration: Migration | None = None) -> None:
        self.migration = migration
        self.error: Exception | None = None
        self.marked: list[tuple[str, str]] = []

    def read(self) -> Migration | None:
        if self.error is not None:
            raise self.error
        return self.migration

    def mark(self, target: str, log_id: str) -> None:
        if self.error is not None:
            raise self.error
        self.marked.append((target, log_id))


@dataclass
class Fakes:
    """The fakes a coordinator of these tests writes to, for tests to look at or break."""

    log: InMemoryEventLog = field(default_factory=InMemoryEventLog)
    writer: ListWriter = field(init=False)
    beats: NoBeats = field(default_factory=NoBeats)
    legacy: FakeLegacyLog = field(default_factory=FakeLegacyLog)

    def __post_init__(self) -> None:
        self.writer = ListWriter(self.log)

    def adapters(self) -> Adapters:
        return Adapters(
            prepare=lambda _create_events: None,
            reader=lambda _client_id, known_log: self.log.reader(known_log),
            writer=lambda _client_id: self.writer,
            log_end=self.log.log_end,
            beats=lambda _client_id, _since_ms: self.beats,
            election=lambda _member: NeverElected(),
            discovery=NoDiscovery,
            legacy=lambda: self.legacy,
        )
