"""Fakes of a coordinator's ports (:class:`~srm_coordinator.ports.Adapters`) for unit
tests: the event log is empty, the writer keeps what it appended, discovery lists nothing
and nobody is elected."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from srm_common.config.model import FlowConfig
from srm_common.control.events import Envelope

from srm_coordinator.ports import Adapters


class NoDiscovery:
    def discover(self, _flow: FlowConfig, _after: int) -> tuple[list[tuple[str, int]], list[str]]:
        return [], []

    def close(self) -> None:
        pass


class ListWriter:
    """An event log writer keeping what it appended in ``appended``. ``before_append``
    runs first (a slow write), then ``error`` is raised if set (a failed one)."""

    def __init__(self) -> None:
        self.appended: list[Envelope] = []
        self.error: Exception | None = None
        self.before_append: Callable[[], object] | None = None
        self.closed = False

    def fence(self) -> None:
        pass

    def append(self, envelopes: list[Envelope]) -> list[Envelope]:
        if self.before_append is not None:
            self.before_append()
        if self.error is not None:
            raise self.error
        written = [replace(e, offset=len(self.appended) + i) for i, e in enumerate(envelopes)]
        self.appended += written
        return written

    def close(self) -> None:
        self.closed = True


class NoBeats:
    closed = False

    def poll(self, _timeout: float = 0) -> list[object]:
        return []

    def close(self) -> None:
        self.closed = True


class EmptyLog:
    """An event log reader, and the log's end, of a log with nothing in it yet."""

    problem = None
    position = -1
    topic_id = "events-topic"

    def read_to_end(self) -> list[Envelope]:
        return []

    def poll(self, _timeout: float = 0) -> list[Envelope]:
        return []

    def take_restart(self) -> bool:
        return False

    def status(self) -> dict[str, object]:
        return {"problem": None}

    def close(self) -> None:
        pass


class EmptyLogEnd:
    def query(self) -> int:
        return 0

    def topic_id(self) -> str:
        return EmptyLog.topic_id


class NeverElected:
    leading = False

    def allow(self, _allowed: bool) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass
class Fakes:
    """The fakes a coordinator of these tests writes to, for tests to look at or break."""

    writer: ListWriter = field(default_factory=ListWriter)
    beats: NoBeats = field(default_factory=NoBeats)

    def adapters(self) -> Adapters:
        return Adapters(
            prepare=lambda _create_events: None,
            reader=lambda _client_id, _known_log: EmptyLog(),
            writer=lambda _client_id: self.writer,
            log_end=EmptyLogEnd,
            beats=lambda _client_id, _since_ms: self.beats,
            election=lambda _member: NeverElected(),
            discovery=NoDiscovery,
        )
