"""When a flow's topics and its consumer groups are looked at again, each on its own interval.

MM2 refreshes topics every ``refresh.topics.interval.seconds`` (MirrorSourceConnector)
and groups every ``refresh.groups.interval.seconds`` (MirrorCheckpointConnector), each
only while its ``*.enabled`` switch is on. One listing of the source answers both
(:mod:`srm_common.adapters.discovery`), so a flow is listed when either is due, and the
listing is used only for the half that is due: the other half of the task configs stays
as it was. A short groups interval therefore never moves a partition or notices a new
topic early, and ``refresh.topics.enabled = false`` keeps the partitions planned at
start-up however often groups are looked at::

    refresh.topics.interval.seconds = 600, refresh.groups.interval.seconds = 10
    t = 0 s      both due (first plan)   partitions and groups from the listing
    t = 10 s     groups due              groups from the listing, partitions kept
    t = 20 s     groups due              groups from the listing, partitions kept
    ...
    t = 600 s    both due                partitions and groups from the listing

An explicit request (srm-control changed a flow's lists, a driver saw the source change)
makes both due at once. Pure: times are passed in, in milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from srm_common.control.flow_records import FlowTasks
from srm_common.domain.tasks import TopicPartition


class DiscoveryPending(Exception):
    """No listing recent enough yet; one is being taken. Ask again next round."""


class RefreshSwitches(Protocol):
    """A flow's refresh settings (:class:`srm_common.config.model.FlowConfig` has them)."""

    @property
    def refresh_topics_enabled(self) -> bool: ...
    @property
    def refresh_topics_interval_seconds(self) -> int: ...
    @property
    def refresh_groups_enabled(self) -> bool: ...
    @property
    def refresh_groups_interval_seconds(self) -> int: ...


NEVER_MS = 2**63 - 1
"""Due time of a refresh whose switch is off: never, unless asked."""


@dataclass(frozen=True)
class Due:
    """Which halves of a flow's task configs are due for a refresh."""

    topics: bool
    groups: bool

    def __bool__(self) -> bool:
        return self.topics or self.groups


class RefreshSchedule:
    """When one flow's topics and groups are due next; both at once when new."""

    def __init__(self) -> None:
        self.topics_ms = 0
        self.groups_ms = 0

    def due(self, now_ms: int) -> Due:
        return Due(self.topics_ms <= now_ms, self.groups_ms <= now_ms)

    def fresh_after_ms(self, due: Due) -> int:
        """The listing must have started at or after this: an older one may miss the
        change that made the flow due."""
        times = [t for t, d in ((self.topics_ms, due.topics), (self.groups_ms, due.groups)) if d]
        return max(times, default=0)

    def ask(self, now_ms: int) -> None:
        """Both due from ``now_ms``, on a listing taken from then on."""
        self.topics_ms = self.groups_ms = now_ms

    def retry(self, due: Due, at_ms: int) -> None:
        """The listing failed: look at the due halves again at ``at_ms``."""
        if due.topics:
            self.topics_ms = at_ms
        if due.groups:
            self.groups_ms = at_ms

    def listed(self, flow: RefreshSwitches, due: Due, now_ms: int) -> None:
        """The due halves were refreshed: next due after their intervals, or never when
        their switch is off."""
        if due.topics:
            self.topics_ms = _next(
                now_ms, flow.refresh_topics_enabled, flow.refresh_topics_interval_seconds
            )
        if due.groups:
            self.groups_ms = _next(
                now_ms, flow.refresh_groups_enabled, flow.refresh_groups_interval_seconds
            )


def _next(now_ms: int, enabled: bool, interval_seconds: int) -> int:
    return now_ms + interval_seconds * 1000 if enabled else NEVER_MS


def refreshed(
    previous: FlowTasks | None,
    due: Due,
    partitions: Sequence[TopicPartition],
    groups: Sequence[str],
) -> tuple[list[TopicPartition], list[str]]:
    """What to plan from: the listed partitions if topics are due, else those of
    ``previous``; likewise groups. Everything listed for a first plan."""
    if previous is None:
        return list(partitions), list(groups)
    kept_partitions = sorted({tp for task in previous.source for tp in task.partitions})
    kept_groups = sorted({g for task in previous.checkpoint for g in task.groups})
    return (
        list(partitions) if due.topics else kept_partitions,
        list(groups) if due.groups else kept_groups,
    )
