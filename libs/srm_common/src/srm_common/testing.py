"""Fakes shared by the unit tests of every package (no Kafka, no clock of the machine)."""

from __future__ import annotations

from srm_common.adapters.discovery import DiscoveryError, DiscoveryPending
from srm_common.config.model import FlowConfig
from srm_common.domain.tasks import TopicPartition


class FakeDiscovery:
    """:class:`~srm_common.adapters.discovery.Discovery` answering from dicts by flow
    name. ``failing`` flows raise as an unreachable cluster would, ``pending`` ones as
    while the listing is still being taken; ``asked`` and ``fresh_after`` record calls."""

    def __init__(
        self,
        partitions: dict[str, list[TopicPartition]],
        groups: dict[str, list[str]] | None = None,
    ) -> None:
        self.found = partitions
        self.found_groups = groups or {}
        self.failing: set[str] = set()
        self.pending: set[str] = set()
        self.asked: list[str] = []
        self.fresh_after: list[int] = []

    def discover(
        self, flow: FlowConfig, fresh_after_ms: int
    ) -> tuple[list[TopicPartition], list[str]]:
        self.asked.append(flow.name)
        self.fresh_after.append(fresh_after_ms)
        if flow.name in self.pending:
            raise DiscoveryPending(flow.source)
        if flow.name in self.failing:
            raise DiscoveryError(f"{flow.name}: cannot list topics of {flow.source}: down")
        return sorted(self.found.get(flow.name, [])), sorted(self.found_groups.get(flow.name, []))

    def close(self) -> None:
        pass


class Clock:
    """A clock in seconds that moves only when a test sets ``at_ms``."""

    def __init__(self, at_ms: int) -> None:
        self.at_ms = at_ms

    def __call__(self) -> float:
        return self.at_ms / 1000
