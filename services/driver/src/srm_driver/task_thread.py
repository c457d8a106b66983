"""A driver task on a thread of its own (heartbeats of a pair, a checkpoint task): it runs
until the driver stops or the task is taken away, and its waits look at both."""

from __future__ import annotations

import threading
import time


class TaskThread(threading.Thread):
    """Subclasses loop while not :meth:`done` and wait with :meth:`pause`."""

    def __init__(self, name: str, stop: threading.Event) -> None:
        super().__init__(name=name, daemon=True)
        self._driver_stop = stop
        self._halted = threading.Event()

    def halt(self) -> None:
        """Stop the task (does not wait: the thread may be in a call to a slow cluster)."""
        self._halted.set()

    def done(self) -> bool:
        return self._driver_stop.is_set() or self._halted.is_set()

    def pause(self, seconds: float) -> None:
        """Wait, looking at the driver's stop and the halt at least every half second."""
        deadline = time.monotonic() + seconds
        while not self.done() and (left := deadline - time.monotonic()) > 0:
            self._halted.wait(min(0.5, left))
