"""Is this still the event log a reader knew, and which of its records are events?

The log has an identity: its first event, ``log.started``, holds a random log id, and the
topic under it has a topic id (Kafka's UUID, new whenever the topic is recreated). A
:class:`LogGuard` sits between a reader's consumer and its fold and decides, record by
record, what may be folded::

    offset  record (topic id A)                  the guard
    0       log.started log_id=5f0c              identity: log 5f0c on topic A; fold
    2       coordinator.elected                  fold
    4       b"junk"                              skip; counted, reported with its offset
    5       flow.enabled                         fold
    7       driver.joined v9                     newer: fold nothing from here on
    --      topic id B, or offsets go back, or   lost: fold nothing more; the reader keeps
            another log.started, or no topic     the last state it folded

Why each verdict:

* **Not an event** (not JSON, not an envelope, fields of the wrong type): nobody can act
  on it, every reader skips the same bytes, so states stay equal. No single record stops
  a coordinator or a driver.
* **Newer** (a well-formed record of a type or version this release does not know): it
  was written by a newer SRM. Folding past it would leave out a decision, and leading
  would let an older release rewrite a newer log; so a coordinator stands by and a driver
  keeps its last assignment (how long it may copy is the lease's business).
* **Lost**: another topic id, offsets going back, a second ``log.started``, the topic
  gone, or a log without the identity the reader knew (empty, or another log id). Folding
  the new log onto the old state is how coordinators diverged: the reader stops and says
  ``event log lost`` with the way back (``srm-control restore``).

A reader that knows a log from before it started (a coordinator remembers the last log
id its SQL projection holds) passes ``known_log``: the log it opens must then show that
identity, or be a restore of it (``restored_from``), before anything is folded.
``known_log=""`` says "a log without an id existed": an empty topic is then lost.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

from srm_common.control.codec import decode
from srm_common.control.schema import (
    Envelope,
    EventDecodeError,
    LogStarted,
    NewerEvent,
)

RESTORE_HINT = (
    "restore it with `srm-control restore --target <its cluster> --from-db URL` (the"
    " gateway's read model) or `... --from-audit FILE` (an `srm-control audit --at TIME"
    " --json` export); see docs/control-path.md"
)


def restore_hint(cluster: str = "") -> str:
    """How to restore the log of the flows into ``cluster`` (every lost or empty log when
    the cluster is not known: srm-control restore without --target)."""
    target = f" --target {cluster}" if cluster else ""
    return (
        f"restore it with `srm-control restore{target} --from-db URL` (the gateway's read"
        " model) or `... --from-audit FILE` (an `srm-control audit --at TIME --json`"
        " export); see docs/control-path.md"
    )


@dataclass(frozen=True, slots=True)
class LogProblem:
    """Why a reader folds nothing more: ``lost`` (another log, or none) or ``newer`` (an
    event this release cannot read) at ``offset``; ``message`` is the line to show."""

    kind: Literal["lost", "newer"]
    message: str
    offset: int = -1


@dataclass(frozen=True, slots=True)
class Skipped:
    """A record that is not an event: where it is and why it is not one."""

    offset: int
    reason: str


class LogGuard:
    """The verdicts of one pass over the log ``topic`` (see the module docstring).

    Feed it the topic id (:meth:`topic_seen`), every record in order (:meth:`record`) and
    the end of the log while opening (:meth:`reached_end`). ``confirmed`` says the
    identity is the one asked for (always, without ``known_log``); ``restored`` that the
    log read is a restore of ``known_log``.
    """

    def __init__(self, topic: str, *, known_log: str | None = None, cluster: str = "") -> None:
        self.topic = topic
        self.cluster = cluster
        self.known_log = known_log
        self.log_id: str | None = None
        self.topic_id: str | None = None
        self.next_offset = 0
        self.events = 0
        self.confirmed = known_log is None
        self.restored = False
        self.problem: LogProblem | None = None
        self.skipped: deque[Skipped] = deque(maxlen=20)
        self.skipped_count = 0

    def where(self, offset: int) -> str:
        return f"{self.topic}-0@{offset}"

    def lose(self, why: str, offset: int = -1) -> None:
        """The log is not the one this reader knew: stop (the first reason stays)."""
        if self.problem is not None:
            return
        known = self.log_id or self.known_log
        log = f"log {known}" if known else "the log"
        self.problem = LogProblem(
            "lost",
            f"event log lost: {why}; folding nothing more, the state stays as {log} left"
            f" it; {restore_hint(self.cluster)}",
            offset,
        )

    def topic_seen(self, topic_id: str | None) -> None:
        """The topic's id now; ``None`` when the brokers say the topic does not exist."""
        if self.problem is not None:
            return
        if topic_id is None:
            if self.topic_id is not None or self.events:
                self.lose(f"the topic {self.topic} was deleted")
            elif self.known_log is not None:
                self.lose(f"the topic {self.topic} does not exist")
            return
        if self.topic_id is None:
            self.topic_id = topic_id
        elif topic_id != self.topic_id:
            self.lose(
                f"the topic {self.topic} was deleted and created again (topic id"
                f" {self.topic_id}, now {topic_id})"
            )

    def record(self, offset: int, value: bytes | None) -> Envelope | None:
        """The envelope to fold, or None: skipped (not an event) or stopped (problem)."""
        if self.problem is not None:
            return None
        if offset < self.next_offset:
            self.lose(
                f"its offsets went back, to {offset} after {self.next_offset - 1} (the"
                " topic was recreated or rewritten)",
                offset,
            )
            return None
        self.next_offset = offset + 1
        try:
            envelope = decode(value or b"", offset=offset)
        except NewerEvent as exc:
            self.problem = LogProblem(
                "newer", f"cannot read the event log past {self.where(offset)}: {exc}", offset
            )
            return None
        except EventDecodeError as exc:
            self.skipped_count += 1
            self.skipped.append(Skipped(offset, str(exc)))
            return None
        event = envelope.event
        if isinstance(event, LogStarted) and not self._identity(event, offset):
            return None
        self.events += 1
        return envelope

    def _identity(self, event: LogStarted, offset: int) -> bool:
        first = self.events == 0
        if self.log_id is not None:
            if event.log_id != self.log_id:
                self.lose(
                    f"another log ({event.log_id}) was started at {self.where(offset)} inside"
                    f" log {self.log_id}",
                    offset,
                )
            return self.problem is None
        if not self.confirmed:
            known = self.known_log
            if event.log_id == known or (
                event.restored_from is not None and event.restored_from == known
            ):
                self.restored = event.log_id != known
            elif known == "" and (event.restored_from is not None or not first):
                # A log without an id restored, or given an id by its first new leader.
                self.restored = event.restored_from is not None
            else:
                self.lose(
                    f"the topic holds log {event.log_id}, not the log"
                    f" {known or 'without an id'} this reader knew",
                    offset,
                )
                return False
            self.confirmed = True
        self.log_id = event.log_id
        return True

    def reached_end(self) -> None:
        """The whole log is read: without the identity asked for by now, it is lost."""
        if self.problem is not None or self.confirmed:
            return
        if self.known_log == "" and self.events:
            self.confirmed = True  # still the log without an id (nothing says otherwise)
        elif not self.events:
            self.lose(f"the topic {self.topic} is empty", self.next_offset)
        else:
            self.lose(
                f"the topic holds {self.events} events but no log.started of log {self.known_log}",
                self.next_offset,
            )
