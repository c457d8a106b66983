"""The event log as the gateway reads it: followed on a thread of its own, folded into
the current state, every envelope kept for the state at a time and the audit trail.

It reads through the same reader as coordinators and drivers
(:class:`~srm_common.adapters.kafka_log.EventLogReader`: read_committed, records that
are not events skipped and reported, a lost or newer log reported and never folded onto
the old state), so the gateway can never disagree with them about what the log says. The
reader is a blocking client; the thread hands immutable snapshots to the async handlers.

*Ready* means: the log was read to where it ended when the gateway started, and no
problem stops reading it. A lost log keeps the last state on display, with the problem.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from srm_common.control.events import Envelope
from srm_common.control.state import ControlState, apply, replay
from srm_common.errors import SrmError

log = logging.getLogger(__name__)


class Reader:
    """What :class:`LogView` needs of an event log reader (the Kafka one, or a fake)."""

    problem: object
    position: int

    def read_to_end(self) -> list[Envelope]: ...
    def poll(self, timeout: float) -> list[Envelope]: ...
    def take_restart(self) -> bool: ...
    def status(self) -> dict[str, object]: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class Snapshot:
    """The state after the first ``count`` envelopes of the log."""

    state: ControlState
    count: int


class LogView:
    """``snapshot()`` (the state and the envelopes so far), ``ready``, ``status()``."""

    def __init__(
        self,
        reader: Callable[[], Reader],
        on_fold: Callable[[list[Envelope], ControlState, bool], None] | None = None,
    ) -> None:
        """``on_fold(fresh, state, restarted)`` is told, on this view's thread, of every
        batch folded (``restarted``: the history before it was dropped, a restored log);
        the SQL read model is fed this way."""
        self._open = reader
        self._on_fold = on_fold
        self._restarted = False
        self._reader: Reader | None = None
        self._snapshot = Snapshot(ControlState(), 0)
        # Only appended to (by the thread), so a reader's slice up to a count is stable.
        self._envelopes: list[Envelope] = []
        self._error: str | None = "starting"
        self.ready = False
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="event-log", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.stop.set()
        self._thread.join(10)

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def envelopes(self) -> list[Envelope]:
        """The envelopes of the current snapshot, in log order."""
        return self._envelopes[: self._snapshot.count]

    def state_at(self, at_ms: int) -> ControlState:
        return replay(self.envelopes(), until_ms=at_ms)

    def status(self) -> dict[str, object]:
        reader = self._reader
        status = dict(reader.status()) if reader is not None else {}
        snapshot = self._snapshot
        return {
            **status,
            "ready": self.ready,
            "error": self._error,
            "offset": snapshot.state.offset,
            "events": snapshot.count,
        }

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self._reader = self._open()
                self._fold(self._reader.read_to_end())
                self.ready = self._reader.problem is None
                self._error = None
                while not self.stop.is_set():
                    if self._reader.take_restart():  # a restored log: a new history
                        self._snapshot = Snapshot(ControlState(), 0)
                        self._envelopes = []
                        self._restarted = True
                    self._fold(self._reader.poll(0.5))
                    self.ready = self._reader.problem is None
            except SrmError as exc:
                self.ready = False
                self._error = str(exc)
                log.warning("cannot follow the event log: %s (retrying in 5 s)", exc)
                self._close_reader()
                self.stop.wait(5)
        self._close_reader()

    def _close_reader(self) -> None:
        if self._reader is not None:
            try:
                self._reader.close()
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
            self._reader = None

    def _fold(self, envelopes: list[Envelope]) -> None:
        current = self._snapshot
        fresh = [e for e in envelopes if e.offset > current.state.offset]
        if not fresh:
            return
        state = current.state
        for envelope in fresh:
            state = apply(state, envelope)
        self._envelopes.extend(fresh)
        self._snapshot = Snapshot(state, len(self._envelopes))
        if self._on_fold is not None:
            restarted, self._restarted = self._restarted, False
            self._on_fold(fresh, state, restarted)
