"""Following one event log: its events folded into one :class:`ControlState`, the one
component coordinators, drivers and the gateway read the control path through.

A :class:`LogFollower` owns a reader of the log (the Kafka one,
:class:`~srm_common.adapters.event_log_reader.EventLogReader`, or the in-memory one of
:mod:`srm_common.testing`) and folds what it returns::

    open the reader (again after a failure, every retry_s)
      -> read to the end once           ready: the log as it was when we started
      -> poll, fold, poll, fold ...     a restored log read from its start: a new history
                                        (the state starts empty, ``restarted`` says so)

Either its own thread does that (:meth:`start`, for drivers and the gateway), or its
owner steps it (:meth:`read_to_end`, :meth:`step`, for a coordinator that must fold before
it decides, and folds what it wrote itself with :meth:`fold`). Whoever reads ``state``
from another thread gets an immutable snapshot; ``on_fold`` is told of every batch on the
follower's thread (a driver checks its incarnation there, the gateway feeds its read
model).

What the reader reports stays the reader's: records that are not events are skipped, a
lost log or one of a newer SRM stops the folding with :attr:`problem` set, and the last
state stays on display (``docs/control-path.md``, the log's identity).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from srm_common.config.control import LEGACY_PREFIX
from srm_common.control.history import combined
from srm_common.control.integrity import LogProblem
from srm_common.control.schema import Envelope
from srm_common.control.state import ControlState, apply, replay
from srm_common.errors import ControlLogError, SrmError

log = logging.getLogger(__name__)


class LogReader(Protocol):
    """What a follower needs of a reader of one event log."""

    problem: LogProblem | None
    position: int

    @property
    def topic_id(self) -> str | None: ...

    @property
    def log_id(self) -> str | None: ...

    missing: bool

    def read_to_end(self, timeout: float = ..., *, missing_ok: bool = ...) -> list[Envelope]: ...
    def poll(self, timeout: float = ...) -> list[Envelope]: ...
    def take_restart(self) -> bool: ...
    def status(self) -> dict[str, object]: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class Folded:
    """One batch folded: the envelopes new to the state, the state before and after
    them, and whether the history before them was dropped (a restored log)."""

    fresh: list[Envelope]
    before: ControlState
    state: ControlState
    restarted: bool = False


@dataclass(frozen=True)
class Snapshot:
    """The state after the first ``count`` envelopes kept (``count`` is 0 when the
    follower keeps none)."""

    state: ControlState = field(default_factory=ControlState)
    count: int = 0


class LogFollower:
    """See the module docstring. ``keep``: keep every envelope folded since the last
    restart (for history: the gateway); ``read_timeout``: how long the first read to the
    end may take before it counts as a failure (and is tried again); ``optional``: a log
    that may not exist (the single log of an earlier release): while its topic is
    missing the follower is ready with nothing in it, and looks again every
    ``OPTIONAL_RECHECK_S``, quietly."""

    OPTIONAL_RECHECK_S = 30.0

    def __init__(
        self,
        open_reader: Callable[[], LogReader],
        *,
        name: str = "event log",
        on_fold: Callable[[Folded], None] | None = None,
        keep: bool = False,
        retry_s: float = 5.0,
        read_timeout: float = 30.0,
        optional: bool = False,
    ) -> None:
        self.name = name
        self.optional = optional
        self._open = open_reader
        self._on_fold = on_fold
        self._keep = keep
        self._retry_s = retry_s
        self._read_timeout = read_timeout
        self.reader: LogReader | None = None
        self._snapshot = Snapshot()
        # Only appended to (on one thread), so a slice up to a snapshot's count is stable.
        self._envelopes: list[Envelope] = []
        # The next log offset to read, after the last fold (-1 before anything was read).
        self.position = -1
        self.ready = False
        self.error: str | None = "starting"
        # Set when following failed for a reason of ours (not of a record or the cluster):
        # the state can no longer be trusted.
        self.broken: str | None = None
        self.stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what it knows ----------------------------------------------------------------

    @property
    def state(self) -> ControlState:
        return self._snapshot.state

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def envelopes(self) -> list[Envelope]:
        """The envelopes of the current snapshot, in log order (``keep`` only)."""
        return self._envelopes[: self._snapshot.count]

    def state_at(self, at_ms: int) -> ControlState:
        """The state folded up to ``at_ms`` from the envelopes kept."""
        return replay(self.envelopes(), until_ms=at_ms)

    @property
    def problem(self) -> LogProblem | None:
        reader = self.reader
        return reader.problem if reader is not None else None

    @property
    def log_id(self) -> str | None:
        reader = self.reader
        return reader.log_id if reader is not None else self.state.log_id

    @property
    def topic_id(self) -> str | None:
        reader = self.reader
        return reader.topic_id if reader is not None else None

    def status(self) -> dict[str, object]:
        """The reader's status (identity, problem, skipped records) and the follower's."""
        reader = self.reader
        found = dict(reader.status()) if reader is not None else {"problem": None}
        snapshot = self._snapshot
        return {
            **found,
            "ready": self.ready,
            "error": self.error,
            "offset": snapshot.state.offset,
            "events": snapshot.count,
        }

    # -- stepping it (on the owner's thread) ------------------------------------------

    def open(self) -> LogReader:
        """The reader, opened now if it is not (the reader's errors propagate)."""
        if self.reader is None:
            self.reader = self._open()
        return self.reader

    def read_to_end(self, timeout: float | None = None) -> list[Envelope]:
        """Fold everything the log holds now; the envelopes new to the state.
        :class:`ControlLogError` when the end is not reached in time."""
        reader = self.open()
        events = reader.read_to_end(timeout or self._read_timeout, missing_ok=self.optional)
        folded = self._fold(events)
        self.ready = reader.problem is None
        self.error = None
        return folded

    def step(self, timeout: float = 0.2) -> list[Envelope]:
        """One poll of the log, folded; the envelopes new to the state. A read error is
        :class:`ControlLogError` (the reader keeps what it read for the next call)."""
        reader = self.open()
        events = reader.poll(timeout)
        restarted = reader.take_restart()
        folded = self._fold(events, restarted=restarted)
        self.ready = reader.problem is None
        return folded

    def fold(self, envelopes: list[Envelope]) -> list[Envelope]:
        """Fold envelopes its owner knows are in the log (it just wrote them)."""
        return self._fold(envelopes)

    # -- its own thread -----------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(10)
        self._close_reader()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.read_to_end()
                if self.optional and getattr(self.reader, "missing", False):
                    self._close_reader()  # nothing there (yet): look again now and then
                    self.stop.wait(self.OPTIONAL_RECHECK_S)
                    continue
                while not self.stop.is_set():
                    self._step_on_thread()
            except SrmError as exc:
                # The log could not be opened or read to its end (its cluster is down, say):
                # keep what was folded, open it again later.
                self.ready = False
                self.error = str(exc)
                log.warning(
                    "cannot follow %s: %s (retrying in %g s)", self.name, exc, self._retry_s
                )
                self._close_reader()
                self.stop.wait(self._retry_s)
            except Exception as exc:  # noqa: BLE001 - a fault of ours, not of a record
                # (the reader skips records that are not events and stops at a newer
                # SRM's): nothing folded from here on could be trusted.
                self.ready = False
                self.broken = self.error = f"cannot follow {self.name} any more: {exc}"
                log.exception("%s", self.broken)
                return

    def _step_on_thread(self) -> None:
        try:
            self.step(0.2)
        except ControlLogError as exc:
            log.warning("cannot read %s: %s (retrying)", self.name, exc)
            self.stop.wait(1)

    def _close_reader(self) -> None:
        reader, self.reader = self.reader, None
        if reader is not None:
            try:
                reader.close()
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass

    # -- folding -------------------------------------------------------------------------

    def _fold(self, envelopes: list[Envelope], *, restarted: bool = False) -> list[Envelope]:
        current = self._snapshot
        if restarted:
            # A restore of the lost log: a new history, folded from an empty state.
            current = Snapshot()
            self._envelopes = []
            self._snapshot = current
        fresh = [e for e in envelopes if e.offset > current.state.offset]
        state = current.state
        for envelope in fresh:
            state = apply(state, envelope)
        if fresh:
            if self._keep:
                self._envelopes.extend(fresh)
            self._snapshot = Snapshot(state, len(self._envelopes))
        # After the state: whoever sees the position reach an offset sees a state that
        # holds every event before it.
        reader = self.reader
        if reader is not None and reader.position >= 0:
            self.position = reader.position
        if self._on_fold is not None and (fresh or restarted):
            self._on_fold(Folded(fresh, current.state, state, restarted))
        return fresh


class LogSet:
    """Several logs followed side by side, one :class:`LogFollower` each, by log name:
    every target cluster's log (and the single log of an earlier release, whose name
    starts ``legacy@``). Each log is folded alone; :meth:`combined` is one state over the
    targets' logs for views, :meth:`histories` every log's envelopes for the audit
    (:mod:`srm_common.control.history` merges them)."""

    def __init__(self, followers: Mapping[str, LogFollower]) -> None:
        self.followers = dict(sorted(followers.items()))

    def start(self) -> None:
        for follower in self.followers.values():
            follower.start()

    def close(self) -> None:
        for follower in self.followers.values():
            follower.stop.set()
        for follower in self.followers.values():
            follower.close()

    def states(self) -> dict[str, ControlState]:
        return {name: f.state for name, f in self.followers.items()}

    def combined(self) -> ControlState:
        """One state over every target's log (not the single log of an earlier release,
        which holds history only)."""
        return combined(
            f.state for name, f in self.followers.items() if not name.startswith(LEGACY_PREFIX)
        )

    def histories(self) -> dict[str, list[Envelope]]:
        """Every log's envelopes kept so far, by log (followers that keep them)."""
        return {name: f.envelopes() for name, f in self.followers.items()}

    def counts(self) -> dict[str, int]:
        return {name: f.snapshot().count for name, f in self.followers.items()}

    def state_of(self, name: str) -> ControlState:
        follower = self.followers.get(name)
        return follower.state if follower is not None else ControlState()

    @property
    def ready(self) -> bool:
        """Every log read to where it ended when we started, and followed."""
        return all(f.ready for f in self.followers.values())

    @property
    def any_ready(self) -> bool:
        return any(f.ready for f in self.followers.values())

    def status(self) -> dict[str, dict[str, object]]:
        return {name: f.status() for name, f in self.followers.items()}
