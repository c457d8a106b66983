"""Progress lines for phases that take minutes: at most one every few seconds."""

from __future__ import annotations

import sys
import time


def say(message: str) -> None:
    print(message, file=sys.stdout, flush=True)


class Progress:
    """Prints ``<label>: <verb> <pct>% (<done>/<total> MB, <rate> MB/s, <elapsed> s)``."""

    def __init__(self, label: str, verb: str, total_bytes: int, every: float = 3.0) -> None:
        self.label = label
        self.verb = verb
        self.total = max(1, total_bytes)
        self.every = every
        self.started = time.monotonic()
        self._last_print = self.started
        self._last_bytes = 0
        self._last_time = self.started

    def update(self, done_bytes: int, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_print < self.every:
            return
        interval = now - self._last_time
        rate = (done_bytes - self._last_bytes) / interval / 2**20 if interval > 0 else 0.0
        pct = 100.0 * done_bytes / self.total
        say(
            f"  {self.label}: {self.verb} {pct:5.1f}% ({done_bytes / 2**20:,.0f}/"
            f"{self.total / 2**20:,.0f} MB, {rate:,.1f} MB/s, {now - self.started:,.0f} s)"
        )
        self._last_print = now
        self._last_bytes = done_bytes
        self._last_time = now
