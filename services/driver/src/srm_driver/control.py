"""A driver's side of the control path: follow the event log, beat, fence itself.

:class:`ControlLink` folds the event log (read_committed) into the shared state and
sends a heartbeat every ``srm.driver.heartbeat.interval.ms`` saying which assignment
generation this driver has applied and which tasks it runs; the coordinator only moves a
task once its old owner reports it stopped. A driver whose heartbeats have not been
acknowledged for most of the session timeout stops its tasks by itself: the coordinator
is about to give them to someone else.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable

from srm_common.adapters.kafka_log import Beat, BeatWriter, ControlLogError, EventLogReader
from srm_common.config.control import ControlSettings
from srm_common.control.state import ControlState, apply

log = logging.getLogger(__name__)

Report = Callable[[], tuple[int, frozenset[str]]]


class ControlLink:
    """The folded state (``state``), membership beats and the self-fence clock."""

    def __init__(self, settings: ControlSettings, driver: str, url: str, report: Report) -> None:
        self.settings = settings
        self.driver = driver
        self.url = url
        self.host = socket.gethostname()
        self.state = ControlState()
        self.changed = threading.Event()
        self.stop = threading.Event()
        self.leaving = False
        self.broken = False
        self._report = report
        self._last_ack = time.monotonic()
        self._reader = EventLogReader(settings, client_id=f"{driver}-log")
        self._writer = BeatWriter(settings, client_id=f"{driver}-beats")
        self._threads = [
            threading.Thread(target=self._follow, name="control-log", daemon=True),
            threading.Thread(target=self._beat, name="control-beat", daemon=True),
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def fenced(self) -> bool:
        """True when no beat was acknowledged for 3/4 of the session timeout."""
        if self.broken:
            return True
        silent = time.monotonic() - self._last_ack
        return silent * 1000 > self.settings.session_timeout_ms * 0.75

    def _follow(self) -> None:
        while not self.stop.is_set():
            try:
                events = self._reader.poll(0.2)
            except ControlLogError as exc:
                log.error("cannot follow the event log: %s", exc)
                self.stop.wait(1)
                continue
            except Exception as exc:  # noqa: BLE001 - e.g. an event of a newer SRM
                # The state can no longer be trusted: stop every task (fenced()) rather
                # than run on a stale assignment.
                log.error("cannot follow the event log any more: %s; stopping all tasks", exc)
                self.broken = True
                self.changed.set()
                self.stop.wait(5)
                continue
            if events:
                state = self.state
                for envelope in events:
                    state = apply(state, envelope)
                self.state = state
                self.changed.set()
        self._reader.close()

    def _beat(self) -> None:
        interval = self.settings.heartbeat_interval_ms / 1000
        while True:
            try:
                # Inside the try: an error here would end this thread silently, and a
                # driver that no longer beats is removed while it still runs its tasks.
                generation, running = self._report()
                beat = Beat(
                    self.driver,
                    self.url,
                    self.host,
                    int(time.time() * 1000),
                    generation,
                    running,
                    leaving=self.leaving,
                )
                if self._writer.send(beat, timeout=interval * 2):
                    self._last_ack = time.monotonic()
            except Exception as exc:  # noqa: BLE001 - keep beating; fenced() tells
                log.warning("heartbeat not sent: %s", exc)
            if self.stop.wait(interval):
                break
        self._writer.close()

    def close(self) -> None:
        """Say goodbye (a leaving beat), then stop following."""
        self.leaving = True
        generation, running = self._report()
        try:
            self._writer.send(
                Beat(
                    self.driver,
                    self.url,
                    self.host,
                    int(time.time() * 1000),
                    generation,
                    running,
                    leaving=True,
                ),
                timeout=5,
            )
        except Exception:  # noqa: BLE001 - best effort; the session timeout will do
            pass
        self.stop.set()
        for thread in self._threads:
            thread.join(5)
