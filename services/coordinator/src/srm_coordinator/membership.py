"""Driver membership as the leader sees it: who beats, who went quiet, what each runs.

Pure: beats and the clock go in, ``DriverJoined`` / ``DriverLeft`` events come out.
A driver is removed once no beat arrived for the session timeout; a new leader gives
every member it inherits from the log a full session before judging it. A driver id that
left never comes back (the driver rejoins under a new id), so a paused driver that wakes
up cannot slip back into its old tasks.
"""

from __future__ import annotations

from collections.abc import Iterable

from srm_common.adapters.kafka_log import Beat
from srm_common.control.assignment import MemberReport
from srm_common.control.events import DriverJoined, DriverLeft, Event
from srm_common.control.state import ControlState


class Membership:
    """Beats observed since this coordinator started leading."""

    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.last_seen: dict[str, int] = {}
        self.reports: dict[str, MemberReport] = {}
        self._latest: dict[str, Beat] = {}
        self._leaving: set[str] = set()
        self._departed: set[str] = set()

    def adopt(self, state: ControlState, now_ms: int) -> None:
        """Start the clock of every member in the log at ``now_ms`` (leader take-over)."""
        for driver in state.drivers:
            self.last_seen.setdefault(driver, now_ms)

    def observe(self, beats: Iterable[Beat], now_ms: int) -> None:
        for beat in beats:
            if beat.driver in self._departed:
                continue
            latest = self._latest.get(beat.driver)
            if latest is not None and beat.at_ms < latest.at_ms:
                continue  # an older beat of this driver, delivered late
            # Liveness by this coordinator's clock: a driver whose clock is behind must
            # not look silent. The driver's own time only orders its beats.
            self.last_seen[beat.driver] = now_ms
            self._latest[beat.driver] = beat
            self.reports[beat.driver] = MemberReport(beat.driver, beat.generation, beat.running)
            if beat.leaving:
                self._leaving.add(beat.driver)

    def changes(self, state: ControlState, now_ms: int) -> list[Event]:
        """Joins of new beating drivers and leaves of silent or leaving members."""
        events: list[Event] = []
        expiry = now_ms - self.session_timeout_ms
        for driver in sorted(state.drivers):
            if driver in self._leaving:
                events.append(DriverLeft(driver, "stopped and left the group"))
            elif self.last_seen.get(driver, now_ms) < expiry:
                silent = (now_ms - self.last_seen[driver]) / 1000
                events.append(
                    DriverLeft(
                        driver,
                        f"no heartbeat for {silent:.1f} s (session timeout"
                        f" {self.session_timeout_ms / 1000:.1f} s)",
                    )
                )
        for driver, beat in sorted(self._latest.items()):
            fresh = self.last_seen[driver] >= expiry
            if driver not in state.drivers and fresh and driver not in self._leaving:
                events.append(DriverJoined(driver, beat.url, beat.host))
        for event in events:
            if isinstance(event, DriverLeft):
                self._departed.add(event.driver)
                self.reports.pop(event.driver, None)
                self._latest.pop(event.driver, None)
        return events
