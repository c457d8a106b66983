"""Fences: who may hold a lease on a target cluster, kept *on that cluster*. Pure; JSON.

A driver may write into a cluster while it holds a lease. It renews the lease from the
event log (still a member when the log ended at the moment it asked) or, so that an
unreachable control cluster does not stop copying into the clusters that are up (static
stability), from the fence topic on the target cluster itself: the leader writes there,
after every membership change it committed, the incarnations that are members
(:class:`Fence`). A driver that reads the fence topic to its end at a moment ``m`` and
finds itself admitted may write into that cluster until ``m + lease``.

It is safe because the leader moves a departed driver's tasks into cluster ``T`` only
after a fence *without* that driver is acknowledged by ``T`` (at ``f``) and the wait-out
has passed from ``f``: a renewal from ``T`` happened before ``f``, a renewal from the log
before the removal was committed, which is before ``f`` too. While the control cluster is
down no leader can commit a change, so none is fenced and drivers go on.

**Which fence counts** (:func:`current`): the last record of the topic, if it carries the
highest log position of its log. A fence a deposed leader writes late (an older position)
therefore admits nobody, and a fence of a restored log (another log id) admits nobody
whose log is the lost one. A reader that cannot decide admits nobody: the log path is
still there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

Incarnation = tuple[str, str]  # (driver id, instance)

VERSION = 1


@dataclass(frozen=True)
class Fence:
    """The members (driver, instance) of log ``log_id`` as of its offset ``position``,
    written by the leader of ``epoch``; ``at_ms`` is its wall clock (display only)."""

    log_id: str
    position: int
    epoch: int
    members: frozenset[Incarnation]
    at_ms: int = 0

    def admits(self, driver: str, instance: str) -> bool:
        return (driver, instance) in self.members

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "v": VERSION,
                "log_id": self.log_id,
                "position": self.position,
                "epoch": self.epoch,
                "members": sorted([driver, instance] for driver, instance in self.members),
                "at": self.at_ms,
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_bytes(cls, value: bytes | None) -> Fence | None:
        """The fence in ``value``; None for bytes that are not one, or of a newer
        version (a reader admits nobody on such a record: the log path decides)."""
        try:
            data = json.loads(value or b"")
            if data["v"] != VERSION:
                return None
            members = frozenset((str(d), str(i)) for d, i in data["members"])
            return cls(
                log_id=str(data["log_id"]),
                position=int(data["position"]),
                epoch=int(data["epoch"]),
                members=members,
                at_ms=int(data.get("at", 0)),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


class FenceHistory:
    """What a reader has seen of one fence topic, in topic order: the highest position
    of each log and the last record (``None``: a record that is no fence)."""

    def __init__(self) -> None:
        self.highest: dict[str, int] = {}
        self.last: Fence | None = None
        self.count = 0

    def add(self, fences: Iterable[Fence | None]) -> None:
        for fence in fences:
            self.count += 1
            self.last = fence
            if fence is not None:
                self.highest[fence.log_id] = max(
                    self.highest.get(fence.log_id, fence.position), fence.position
                )

    def current(self) -> Fence | None:
        """The fence in force: the last record, unless a later position of its log was
        written before it (a deposed leader's late write) or it is no fence."""
        last = self.last
        if last is None or last.position < self.highest.get(last.log_id, last.position):
            return None
        return last

    def admits(self, log_id: str | None, driver: str, instance: str) -> bool:
        """The fence in force is of log ``log_id`` and lists this incarnation."""
        fence = self.current()
        return fence is not None and fence.log_id == log_id and fence.admits(driver, instance)
