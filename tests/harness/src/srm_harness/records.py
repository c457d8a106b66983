"""Records as a user's client sees them (what replication must preserve), and the
timestamp test data carries."""

from __future__ import annotations

import time
from dataclasses import dataclass

Header = tuple[str, bytes | None]


@dataclass(frozen=True)
class Record:
    """A record as a user's client sees it; what replication must preserve."""

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp_ms: int | None = None
    partition: int | None = None
    offset: int | None = None

    def content(self) -> tuple[bytes | None, bytes | None, tuple[Header, ...], int | None]:
        """Everything but the position: what source and target must agree on."""
        return (self.key, self.value, self.headers, self.timestamp_ms)


RECENT_MS = int(time.time() * 1000) - 3_600_000
"""A record timestamp for test data: an hour before the run started. Never a fixed date:
a broker deletes records older than its retention (7 days by default) at its next
retention check, whichever test is still reading them (offset 0 out of range, the
partition read as empty)."""
