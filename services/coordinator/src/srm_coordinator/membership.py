"""Driver membership as the leader sees it: who beats, who went quiet, what each runs.

Pure: beats and a monotonic clock go in, ``DriverJoined`` / ``DriverLeft`` events come
out. A driver is an incarnation: its id plus the ``instance`` it beats with.

* A member is removed once no beat of its incarnation arrived for the session timeout
  (by this coordinator's monotonic clock: a driver's clock never decides), or when it says
  it leaves. A new leader gives every member it inherits from the log a full session.
* A beat of another instance under a member's id is a new incarnation of it: a restart
  under the same id, or a second process started with it. The member is removed and the
  new incarnation joins; the old one sees its id taken and stops, so two processes never
  run the same tasks.
* **Nobody beats, nobody is removed for silence.** While no beat at all arrives, the
  likelier cause is this coordinator's view (the control cluster, or the path to it, is
  down) and there is no live driver to move tasks to anyway; when beats arrive again
  after such a gap (a third of the session timeout), every member starts a new session
  from then, so the drivers that kept copying through an outage of the control cluster
  are not removed in the moment before their next beats are read.
* A removed incarnation never comes back (its beats are ignored); the driver rejoins as a
  new instance, and the leader waits out the old one's lease before its tasks move.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from srm_common.control.assignment import MemberReport
from srm_common.control.beats import Beat
from srm_common.control.events import DriverJoined, DriverLeft, Event
from srm_common.control.state import ControlState

Incarnation = tuple[str, str]  # (driver id, instance)


@dataclass(frozen=True)
class Departure:
    """A member removed this round: its tasks (assigned, or reported running) and the
    timings its writes must be waited out with."""

    driver: str
    tasks: frozenset[str]
    lease_ms: int
    write_timeout_ms: int


class Membership:
    """Beats observed since this coordinator started leading."""

    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.last_seen: dict[str, int] = {}
        self.reports: dict[str, MemberReport] = {}
        self.departures: list[Departure] = []
        self._latest: dict[Incarnation, Beat] = {}
        self._seen: dict[Incarnation, int] = {}
        # The first beat of each incarnation read from the heartbeats topic (offset).
        self._first: dict[Incarnation, int] = {}
        self._leaving: set[Incarnation] = set()
        self._departed: set[Incarnation] = set()
        self._timings: dict[str, tuple[int, int]] = {}
        # When the last beat of anyone arrived, and when beats came back after a gap.
        self._last_any: int | None = None
        self._resumed_at: int | None = None

    def adopt(self, state: ControlState, now_ms: int) -> None:
        """Start the clock of every member in the log at ``now_ms`` (leader take-over)."""
        for driver in state.drivers:
            self.last_seen.setdefault(driver, now_ms)

    def observe(self, beats: Iterable[Beat], now_ms: int) -> None:
        beats = list(beats)
        if beats:
            if self._last_any is not None and now_ms - self._last_any > self._gap_ms:
                self._resumed_at = now_ms
            self._last_any = now_ms
        for beat in beats:
            key = (beat.driver, beat.instance)
            if key in self._departed:
                continue
            latest = self._latest.get(key)
            if latest is not None and beat.older_than(latest):
                continue  # an older beat of this incarnation, delivered late
            self._latest[key] = beat
            self._seen[key] = now_ms
            if beat.offset >= 0:
                self._first[key] = min(self._first.get(key, beat.offset), beat.offset)
            if beat.leaving:
                self._leaving.add(key)
            lease, write = self._timings.get(beat.driver, (0, 0))
            self._timings[beat.driver] = (
                max(lease, beat.lease_ms),
                max(write, beat.write_timeout_ms),
            )

    @property
    def _gap_ms(self) -> int:
        return self.session_timeout_ms // 3

    def changes(self, state: ControlState, now_ms: int) -> list[Event]:
        """Leaves of silent, leaving or replaced members, then joins of new incarnations."""
        events: list[Event] = []
        expiry = now_ms - self.session_timeout_ms
        # Silence counts only while beats arrive, and from when they came back.
        anyone = self._last_any is not None and now_ms - self._last_any <= self._gap_ms
        silence_since = self._resumed_at if self._resumed_at is not None else -(2**62)
        for driver in sorted(state.drivers):
            instance = state.drivers[driver].instance
            member = self._member_key(driver, instance)
            if member is not None and member in self._seen:
                # Liveness by this coordinator's clock; the driver's own time only orders
                # its beats.
                self.last_seen[driver] = self._seen[member]
                beat = self._latest[member]
                self.reports[driver] = MemberReport(driver, beat.generation, beat.running)
            newer = self._newer_incarnation(driver, instance, expiry)
            if member in self._leaving:
                events.append(
                    self._leave(state, driver, instance, "stopped and left the group", clean=True)
                )
            elif newer is not None:
                events.append(
                    self._leave(
                        state,
                        driver,
                        instance,
                        f"replaced by instance {newer.instance} on {newer.host or '?'} (a"
                        " restart under the same id, or a second process with it)",
                    )
                )
            elif anyone and max(self.last_seen.get(driver, now_ms), silence_since) < expiry:
                silent = (now_ms - self.last_seen[driver]) / 1000
                events.append(
                    self._leave(
                        state,
                        driver,
                        instance,
                        f"no heartbeat for {silent:.1f} s (session timeout"
                        f" {self.session_timeout_ms / 1000:.1f} s)",
                    )
                )
        gone = {event.driver for event in events if isinstance(event, DriverLeft)}
        for (driver, instance), beat in sorted(self._latest.items()):
            key = (driver, instance)
            fresh = self._seen[key] >= expiry
            joinable = driver not in state.drivers or driver in gone
            if joinable and fresh and key not in self._leaving and key not in self._departed:
                if any(isinstance(e, DriverJoined) and e.driver == driver for e in events):
                    continue  # two new instances at once: the other waits a round
                events.append(DriverJoined(driver, beat.url, beat.host, instance))
                self.last_seen[driver] = self._seen[key]
                self.reports[driver] = MemberReport(driver, beat.generation, beat.running)
        return events

    def timings(self, driver: str) -> tuple[int, int]:
        """The largest (lease_ms, write_timeout_ms) the driver ever reported; (0, 0)."""
        return self._timings.get(driver, (0, 0))

    def _member_key(self, driver: str, instance: str) -> Incarnation | None:
        if instance:
            return (driver, instance)
        # A member from before incarnations: any instance of its id is it.
        keys = [k for k in self._latest if k[0] == driver and k not in self._departed]
        return max(keys, key=lambda k: self._seen[k]) if keys else None

    def _newer_incarnation(self, driver: str, instance: str, expiry: int) -> Beat | None:
        """Another instance of ``driver`` that beats now and *after* the member began:
        beats of an older incarnation read again by a new leader (they look fresh to its
        clock) never replace the member."""
        if not instance:
            return None
        member_first = self._first.get((driver, instance))
        candidates = [
            beat
            for (name, other), beat in self._latest.items()
            if name == driver
            and other != instance
            and (name, other) not in self._departed
            and (name, other) not in self._leaving
            and self._seen[(name, other)] >= expiry
            and (member_first is None or beat.offset < 0 or beat.offset > member_first)
        ]
        return max(candidates, key=lambda b: self._seen[(b.driver, b.instance)], default=None)

    def _leave(
        self, state: ControlState, driver: str, instance: str, reason: str, *, clean: bool = False
    ) -> DriverLeft:
        """``clean``: the driver said goodbye after stopping its tasks, and its leaving
        beat lists what still ran; only those are waited out (a copy slot reports a
        partition stopped only when nothing it sent is outstanding). Otherwise every task
        assigned to it or reported running is."""
        assigned = {task for task, owner in state.assignment.items() if owner == driver}
        report = self.reports.pop(driver, None)
        running = set(report.running) if report else set()
        tasks = running if clean and report is not None else assigned | running
        lease, write = self._timings.get(driver, (0, 0))
        self.departures.append(Departure(driver, frozenset(tasks), lease, write))
        for key in [
            k for k in self._latest if k[0] == driver and (not instance or k[1] == instance)
        ]:
            self._departed.add(key)
            del self._latest[key]
        if instance:
            self._departed.add((driver, instance))
        return DriverLeft(driver, reason)
