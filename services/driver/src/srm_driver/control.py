"""A driver's side of one target cluster's control path: follow its log, beat, hold a
lease on writing into it.

Every target cluster holds the log of the flows into it; a driver keeps one
:class:`ControlLink` per target it serves (:mod:`srm_driver.coordinated_tasks`). A link
folds its log (read_committed) into the shared state and sends a heartbeat every
``srm.driver.heartbeat.interval.ms`` into that cluster, saying which incarnation of the
driver this is, which assignment generation of the log it has applied and which of the
log's tasks it runs.

**The lease.** After each beat the link *confirms* its membership: it asks where the
committed log ends at a moment ``m`` (monotonic), reads the log up to there, and if this
incarnation is still a member, the driver may write into the log's cluster until
``m + srm.driver.lease.ms``. A removal the leader committed before ``m`` is therefore
always seen, so once the leader has removed a driver, that driver's lease ends at most
``lease.ms`` later, whatever its clock, pauses or network do; the leader waits that out
(and the write timeout) before it gives the tasks to anyone else (docs/design.md,
fencing). The log lives in the cluster the writes go to: a driver that cannot reach it
cannot write there either, and a cluster lost elsewhere changes nothing here.

**Held since.** The link also knows since when it has held the lease without a gap
(:meth:`ControlLink.lease_held_since`): each confirmation began before the lease the
previous one gave ran out, and the incarnation never changed. The copy planner needs it
to restart a partition where its copies were acknowledged (nobody else wrote it since),
however long its own passes take.

**A log that cannot be followed.** When the event log is lost (deleted, recreated,
another log in its place) or holds an event of a newer SRM, the reader folds nothing
more: the driver keeps the state it had, so its last assignment. It cannot see decisions
made after that point, so it renews its lease only while *no coordinator leads* (no
member holds the election partition; coordinators leave the election when they cannot
follow the log, and nothing but a leader moves tasks). So replication goes on while the
control plane is stuck, and stops within ``lease.ms`` once anybody leads again, a leader
of another log included. A restored log (``srm-control restore``) is read from its start:
the driver is in no group of it, so it rejoins as a new instance, holding no lease until
the new leader counts it in (and that leader waits out the lost log's drivers first).

**Traces.** When events a command caused (they carry its trace context: srm-control's
``topics --add`` through the gateway and the leader) give this driver partitions to
copy, it logs one line saying what it now runs, ending ``trace_id=<32 hex>``, and makes
a span in that trace: the operator's command can be followed to the driver that applies
it. The copy slots take the new partitions on the runtime's next pass (0.2 s).

**Incarnations.** Each link beats with a random ``instance``. When the log shows this
driver id held by another instance, another process took the id over: this one stops
(:attr:`ControlLink.replaced`) and never runs the same tasks beside it. When the leader
removed this driver (it went silent), it rejoins as a new instance of the same id.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from srm_common import telemetry
from srm_common.config.control import ControlSettings
from srm_common.control.beats import Beat
from srm_common.control.state import ControlState
from srm_common.errors import ControlLogError
from srm_common.log_follower import Folded, LogFollower, LogReader

from srm_driver.applied_trace import trace_applied

log = logging.getLogger(__name__)

Report = Callable[[], tuple[int, frozenset[str]]]


class LogEnd(Protocol):
    """Where the event log ends (:class:`~srm_common.adapters.event_log_end.EventLogEnd`)."""

    def query(self, timeout: float = ...) -> int: ...
    def topic_id(self, timeout: float = ...) -> str | None: ...
    def someone_leads(self, timeout: float = ...) -> bool: ...


class BeatSender(Protocol):
    """Sends heartbeats (:class:`~srm_common.adapters.heartbeats.BeatWriter`)."""

    def send(self, beat: Beat, timeout: float) -> bool: ...
    def close(self) -> None: ...


def new_instance() -> str:
    return uuid.uuid4().hex[:8]


@dataclass(frozen=True)
class LinkPorts:
    """What a link reads and writes (:mod:`srm_driver.bootstrap` builds the Kafka ones):
    an opener of the event log's reader, where the log ends, the heartbeats' writer, and
    a check of the control topics' shape at start (raising what it refuses)."""

    reader: Callable[[], LogReader]
    end: LogEnd
    beats: BeatSender
    check: Callable[[], object] = lambda: None


class ControlLink:
    """The folded state (``state``), membership beats and the lease."""

    def __init__(
        self,
        settings: ControlSettings,
        driver: str,
        url: str,
        report: Report,
        ports: LinkPorts,
        *,
        flow_targets: Mapping[str, str] | None = None,
        changed: threading.Event | None = None,
    ) -> None:
        """``flow_targets``: the flows of this log (flow -> its target, the log's
        cluster); ``changed``: set when the state changed (shared by a driver's links)."""
        self.settings = settings
        self.driver = driver
        self.instance = new_instance()
        self._seq = 0  # beats sent by this incarnation: they are ordered by it
        self.url = url
        self.host = socket.gethostname()
        self.changed = changed or threading.Event()
        self.stop = threading.Event()
        self.leaving = False
        self.replaced: str | None = None
        self._report = report
        self._member = False
        self._confirmed_at: float | None = None
        self._held_since: float | None = None  # first confirmation of the unbroken run
        # A renewal and a removal never interleave: a confirmation of the old incarnation
        # never renews the new one's lease.
        self._lease_lock = threading.Lock()
        self.follower = LogFollower(
            ports.reader, name=f"the log of {settings.name}", on_fold=self._folded
        )
        self._end = ports.end
        self._writer = ports.beats
        self._flow_targets = dict(flow_targets or {})
        meter = telemetry.meter()
        self._events_read = meter.create_counter(
            "srm.driver.control.events", description="control events read from the log"
        )
        self._log_position = meter.create_gauge(
            "srm.driver.control.position", description="event log offset folded up to"
        )
        self._threads = [
            threading.Thread(target=self._beat, name=f"beat-{settings.name}", daemon=True),
        ]

    @property
    def state(self) -> ControlState:
        return self.follower.state

    @property
    def broken(self) -> str | None:
        return self.follower.broken

    def start(self) -> None:
        self.follower.start()
        for thread in self._threads:
            thread.start()

    # -- membership and lease ----------------------------------------------------------

    def is_member(self, state: ControlState | None = None) -> bool:
        """This incarnation is a member of the group in ``state`` (default: now)."""
        info = (state or self.state).drivers.get(self.driver)
        return info is not None and info.instance in ("", self.instance)

    def lease_ms(self, flow: str | None = None) -> int:
        """Milliseconds this driver may still write into the log's cluster (``flow``: one
        of the log's flows; a flow of another log has no lease here); 0 without one."""
        if self.broken or self.replaced:
            return 0
        if flow is not None and self._flow_targets and flow not in self._flow_targets:
            return 0
        confirmed = self._confirmed_at
        if confirmed is None:
            return 0
        left = confirmed + self.settings.lease_ms / 1000 - time.monotonic()
        return max(0, int(left * 1000))

    def lease_held_since(self, flow: str | None = None) -> float | None:
        """Since when (``time.monotonic``) this driver has held the lease of ``flow``
        without a gap; None when it holds none now."""
        # The lease first, then the start of its run: a run that began in between (the
        # lease ran out and was confirmed again) only makes the answer later.
        if self.lease_ms(flow) <= 0:
            return None
        return self._held_since

    def log_status(self) -> dict[str, object]:
        """The event log as this driver reads it (for ``GET /v1/driver``)."""
        reader = self.follower.reader
        return reader.status() if reader is not None else {"problem": self.follower.error}

    def _confirm(self) -> None:
        """Read the log up to where it ends now; if still a member, renew the lease."""
        started, instance = time.monotonic(), self.instance
        timeout = self.settings.heartbeat_interval_ms / 1000
        if self.follower.problem is not None:
            # Nothing after the last event folded can be seen; nothing moves a task while
            # no coordinator leads (see the module docstring).
            if self.is_member() and not self._end.someone_leads(timeout):
                self._renew(started, instance)
            return
        try:
            end = self._end.query(timeout=timeout)
            if self._end.topic_id(timeout) != self.follower.topic_id:
                return  # another topic than the one folded: no renewal (the reader says why)
        except ControlLogError as exc:
            log.warning("cannot confirm membership: %s", exc)
            return
        deadline = started + self.settings.heartbeat_interval_ms / 1000
        while self.follower.position < end and time.monotonic() < deadline:
            if self.stop.wait(0.01):
                return
        if self.follower.position < end:
            return  # the log is slow to read: no renewal this time
        self._renew(started, instance)

    def _renew(self, started: float, instance: str) -> None:
        """Renew the lease from a confirmation that began at ``started``, if this is still
        the incarnation that began it and still a member."""
        with self._lease_lock:
            if self.instance != instance or not self.is_member():
                return  # removed meanwhile: the new incarnation confirms on its own
            previous = self._confirmed_at
            if previous is None or started > previous + self.settings.lease_ms / 1000:
                self._held_since = started  # a new run: the last lease ran out (or none)
            self._confirmed_at = started if previous is None else max(previous, started)

    def _check_identity(self, state: ControlState) -> None:
        info = state.drivers.get(self.driver)
        if info is not None and info.instance not in ("", self.instance):
            if self._member and self.replaced is None:
                self.replaced = (
                    f"driver id {self.driver!r} was taken over by another process (instance"
                    f" {info.instance} on {info.host or 'an unknown host'}); this one"
                    f" (instance {self.instance}) stops"
                )
                log.error("%s", self.replaced)
            return
        if info is not None:
            self._member = True
        elif self._member and not self.leaving:
            # Removed for silence (a pause, a lost connection): come back as a new
            # incarnation; the leader waits out the old one's lease before moving tasks.
            with self._lease_lock:
                old, self.instance = self.instance, new_instance()
                self._member = False
                self._confirmed_at = self._held_since = None
            log.warning(
                "driver %s (instance %s) was removed from the group; rejoining as instance %s",
                self.driver,
                old,
                self.instance,
            )

    # -- threads ------------------------------------------------------------------------

    def _folded(self, folded: Folded) -> None:
        """On the follower's thread, after each batch: who this driver is now, and the
        line of a traced change it applies."""
        if folded.restarted:
            # A restore of the lost log: a new history, in which this driver is no member
            # yet (it rejoins; see _check_identity).
            self.changed.set()
        if folded.fresh:
            self._check_identity(folded.state)
            self.changed.set()
            self._events_read.add(len(folded.fresh), {"srm.log": self.settings.name})
            try:
                trace_applied(self.driver, folded.before, folded.state, folded.fresh)
            except Exception as exc:  # noqa: BLE001 - a trace never stops the following
                log.warning("cannot trace what the events applied: %s", exc)
        self._log_position.set(self.follower.position, {"srm.log": self.settings.name})

    def _beat(self) -> None:
        interval = self.settings.heartbeat_interval_ms / 1000
        while True:
            started = time.monotonic()
            try:
                # Inside the try: an error here would end this thread silently, and a
                # driver that no longer beats is removed while it still runs its tasks.
                self._writer.send(self._beat_now(), timeout=interval * 2)
                self._confirm()
            except Exception as exc:  # noqa: BLE001 - keep beating; the lease tells
                log.warning("heartbeat not sent: %s", exc)
            if self.stop.wait(max(0.0, interval - (time.monotonic() - started))):
                break
        self._writer.close()

    def _beat_now(self, *, leaving: bool = False) -> Beat:
        generation, running = self._report()
        self._seq += 1
        return Beat(
            self.driver,
            self.url,
            self.host,
            int(time.time() * 1000),
            generation,
            running,
            leaving=leaving or self.leaving,
            instance=self.instance,
            lease_ms=self.settings.lease_ms,
            write_timeout_ms=self.settings.write_timeout_ms,
            seq=self._seq,
        )

    def close(self) -> None:
        """Say goodbye (a leaving beat), then stop following."""
        self.leaving = True
        try:
            self._writer.send(self._beat_now(leaving=True), timeout=5)
        except Exception:  # noqa: BLE001 - best effort; the session timeout will do
            pass
        self.stop.set()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(5)
        self.follower.close()
