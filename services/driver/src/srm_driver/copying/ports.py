"""What the copy service talks to, as ports: a flow's progress and sync writers and its
facts reader (built by the composition root), the Spark job, and the events it raises."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from srm_common.config.model import FlowConfig
from srm_common.domain.progress import Progress

from srm_driver.copying.clients import UnitSettings
from srm_driver.copying.facts import FlowFacts

TopicPartition = tuple[str, int]
# The longest lease the driver gives its slots at a time (a standalone driver's whole
# lease: if it stops answering, its slots stop within this).
LEASE_CAP_MS = 30_000


class ProgressWriter(Protocol):
    def write(self, updates: Iterable[tuple[TopicPartition, Progress]]) -> None: ...

    def load(self) -> Mapping[TopicPartition, Progress]: ...


class SyncWriter(Protocol):
    def write(self, records: Iterable[tuple[bytes, bytes]]) -> int: ...


@dataclass
class FlowAdapters:
    """The clients one flow's copying needs, built once by the composition root."""

    flow: FlowConfig
    store: ProgressWriter
    syncs: SyncWriter
    facts: FlowFacts
    settings: UnitSettings
    shared: bool


class CopyJob(Protocol):
    """The Spark job the copy slots run in (:class:`srm_driver.copying.job.CopyJob`)."""

    slots: int
    job_id: str | None
    error: str | None
    local: bool

    def ready(self) -> bool: ...

    def start(self) -> str: ...

    def grow(self) -> list[int]: ...

    def executors(self) -> frozenset[str] | None: ...

    def running(self) -> bool: ...

    def cancel(self) -> None: ...

    def join(self, timeout: float) -> bool: ...

    def active_slots(self) -> int | None: ...


@dataclass(frozen=True)
class CopyEvent:
    """Something an operator must hear about: ``kind`` ``halted`` (``detail`` is the halt
    kind, ``text`` the reason) or ``lost`` (retention deleted ``[first, end)``)."""

    kind: str
    flow: str
    topic: str
    partition: int
    detail: str = ""
    text: str = ""
    first: int = -1
    end: int = -1
