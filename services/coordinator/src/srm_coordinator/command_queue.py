"""Commands on their way from the HTTP API's threads to the loop that carries them out.

A caller waits for its command's outcome. One that waited its whole timeout in the
queue is withdrawn, so a caller told "timed out" is never surprised by it being applied
later; one the loop had started on is waited for a while longer and, if still not done,
reported as possibly applied. When the instance stops leading, whatever waits is
refused with where the leader is.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from srm_common import telemetry
from srm_common.control.commands import Command
from srm_common.errors import SrmError
from srm_common.tracecontext import TraceContext

from srm_coordinator.leader_term import CommandResult


class CommandTimedOut(SrmError):
    """The leader did not carry out a command in time; the message says whether it may
    still have been applied (``maybe_applied``)."""

    def __init__(self, message: str, *, maybe_applied: bool) -> None:
        super().__init__(message)
        self.maybe_applied = maybe_applied


@dataclass(frozen=True)
class Queued:
    """A command, who asked, the trace context of the request that brought it, and the
    future its caller waits on."""

    command: Command
    by: str
    trace: TraceContext | None
    outcome: Future[CommandResult]


class CommandQueue:
    """Submitted by any thread, taken by the coordinator's loop."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Queued] = queue.Queue()

    def submit(self, command: Command, by: str, timeout: float) -> CommandResult:
        """Wait for ``command``'s outcome: its result, the exception the loop set
        (``CommandRejected``, ``NotLeader``), or :class:`CommandTimedOut`."""
        outcome: Future[CommandResult] = Future()
        self._queue.put(Queued(command, by, telemetry.context_now(), outcome))
        try:
            return outcome.result(timeout)
        except FutureTimeout:
            if outcome.cancel():
                raise CommandTimedOut(
                    f"the leader did not get to the command within {timeout:g} s"
                    " (is the control cluster slow?); it was withdrawn and not applied:"
                    " try again",
                    maybe_applied=False,
                ) from None
        try:  # the loop had started on it: wait for the outcome a while longer
            return outcome.result(timeout / 2)
        except FutureTimeout:
            raise CommandTimedOut(
                "the leader is still writing the command to the event log; it may yet be"
                " applied: check with --list or audit before trying again",
                maybe_applied=True,
            ) from None

    def empty(self) -> bool:
        return self._queue.empty()

    def take(self) -> Iterator[Queued]:
        """The commands waiting now, each marked running as it is taken (the ones their
        callers withdrew are skipped); stop iterating to leave the rest queued."""
        while True:
            try:
                queued = self._queue.get_nowait()
            except queue.Empty:
                return
            if queued.outcome.set_running_or_notify_cancel():
                yield queued

    def refuse_all(self, error: Callable[[], Exception]) -> None:
        """Answer every waiting command with ``error()`` (this instance does not lead)."""
        for queued in self.take():
            queued.outcome.set_exception(error())
