"""Fakes of the driver's ports shared by its unit tests (the shared fakes of every
package are in :mod:`srm_common.testing`: clock, discovery, the event log). Nothing here
talks to Kafka or starts a thread.
"""

from __future__ import annotations

import threading


class NoBeats:
    """A :class:`~srm_driver.control.BeatSender` that takes every beat and sends none."""

    def send(self, _beat: object, timeout: float) -> bool:
        return True

    def close(self) -> None:
        pass


class IdleCopy:
    """The copy service as :class:`~srm_driver.runtime.DriverRuntime` sees it, copying
    nothing: it holds no partition, takes what it is handed and resumes none."""

    def held(self, flow: str) -> frozenset[tuple[str, int]]:
        return frozenset()

    def set_owned(self, *_args: object) -> None: ...

    def request_resume(self, *_args: object) -> bool:
        return False

    def stop(self, timeout: float) -> None: ...


class QuietSource:
    """A task source whose assignment never changes (``changed`` is never set unless a
    test sets it), for tests that hand the runtime its assignment themselves."""

    def __init__(self) -> None:
        self.changed = threading.Event()

    def close(self) -> None: ...


class FakeCopyJob:
    """A :class:`~srm_driver.copying.ports.CopyJob` that runs nothing. ``up``: Spark up,
    still starting (False) or failed to start (the exception ``ready`` raises); each
    start is ``job-1``, ``job-2``... (``started`` counts them); ``more``: slots Spark can
    add, handed out once by ``grow``; ``listed``: the executors Spark lists (None: local
    mode, or Spark could not be asked); ``active``: slots still running on this host."""

    slots = 2
    local = True

    def __init__(self) -> None:
        self.job_id: str | None = None
        self.error: str | None = None
        self.up: bool | Exception = True
        self.started = 0
        self.more: list[int] = []
        self.listed: frozenset[str] | None = None
        self.active = 0

    def ready(self) -> bool:
        if isinstance(self.up, Exception):
            raise self.up
        return self.up

    def start(self) -> str:
        self.started += 1
        self.job_id = f"job-{self.started}"
        return self.job_id

    def grow(self) -> list[int]:
        added, self.more = self.more, []
        return added

    def executors(self) -> frozenset[str] | None:
        return self.listed

    def running(self) -> bool:
        return self.job_id is not None

    def cancel(self) -> None:
        self.job_id = None

    def join(self, timeout: float) -> bool:
        return True

    def active_slots(self) -> int:
        return self.active
