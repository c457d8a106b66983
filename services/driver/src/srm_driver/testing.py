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
