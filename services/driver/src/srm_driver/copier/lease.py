"""Until when one flow unit of a slot may hand records to its producer, on this process's
monotonic clock.

The driver answers each control request with the lease it still holds for each flow, in
milliseconds. The slot counts that from the moment it *sent* the request, so however long
the answer took, the deadline here is never later than the driver's own: the driver's
lease ends when the coordinator may have given the work to someone else, and nothing
reaches a producer here after that (docs/design.md, fencing).
"""

from __future__ import annotations

import threading
import time


class Lease:
    """``deadline_ns`` is read without a lock by the copy loop before every record (an
    int attribute: one read); 0 means revoked or never granted."""

    def __init__(self) -> None:
        self.deadline_ns = 0
        self._lock = threading.Lock()

    def grant(self, sent_at_ns: int, millis: int) -> None:
        """Extend to ``sent_at_ns + millis``; a lease never moves backwards except to 0."""
        with self._lock:
            if millis <= 0:
                self.deadline_ns = 0
                return
            self.deadline_ns = max(self.deadline_ns, sent_at_ns + millis * 1_000_000)

    def revoke(self) -> None:
        with self._lock:
            self.deadline_ns = 0

    def valid(self) -> bool:
        return time.monotonic_ns() < self.deadline_ns

    def remaining_ms(self) -> int:
        """Milliseconds left, 0 when expired or never granted."""
        return max(0, (self.deadline_ns - time.monotonic_ns()) // 1_000_000)
