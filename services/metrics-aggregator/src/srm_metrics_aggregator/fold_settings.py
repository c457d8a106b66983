"""The folds' settings (:class:`Settings`): window sizes, grace, how often an open
window is sent again, and how long closed windows and entries are kept."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    windows: tuple[int, ...] = (60_000, 3_600_000)
    grace_ms: int = 30_000
    update_ms: int = 5_000
    future_ms: int = 3_600_000
    min_retention_ms: int = 600_000

    def update_s(self, size_ms: int) -> float:
        """How long an open window of ``size_ms`` waits between two updates: ``update_ms``,
        and at least a sixtieth of its size (an hour window: a minute), so that the
        windows of 10,000 partitions are not all written every few seconds (0: at once)."""
        return max(self.update_ms, size_ms // 60) / 1000 if self.update_ms else 0.0

    def grace(self, size_ms: int) -> int:
        return min(size_ms, self.grace_ms)

    def keep_ms(self, size_ms: int) -> int:
        """How long after its close a window's cells (and ids) are kept: one window, at
        least :attr:`min_retention_ms`. Long enough for a sample sent twice to be known,
        and for a restart to send again a close that a crash kept from being sent."""
        return max(size_ms, self.min_retention_ms)

    def retention_ms(self, size_ms: int) -> int:
        """How long after its end an entry above the partition is kept (ten windows, at
        least :attr:`min_retention_ms`): a partition's contribution may be that late."""
        return max(10 * size_ms, self.min_retention_ms)
