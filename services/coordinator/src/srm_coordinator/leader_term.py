"""One term of leading a log: from fencing its transactional writer to the first append
that fails (fenced by a newer leader, or the log's cluster refusing it).

A term owns what only the leader holds: the writer, the drivers' beats, membership and
the leader's decisions (:class:`srm_coordinator.leader.Leader`). It decides rounds and
carries out commands, appends each round's events in one transaction and folds what was
appended. The coordinator (:mod:`srm_coordinator.service`) keeps what outlives a term:
reading the log, the election, the command queue; it starts a term when elected and
ends it when the term says it ended, when the election is lost, or on stop.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from srm_common.control.commands import (
    ChangePatterns,
    Command,
    applied_before,
    command_id,
    decide,
)
from srm_common.control.events import describe
from srm_common.control.state import ControlState
from srm_common.control.state_records import AppliedCommand
from srm_common.errors import ControlLogError, Fenced
from srm_common.log_follower import LogFollower
from srm_common.tracecontext import TraceContext

from srm_coordinator.leader import Leader, Round
from srm_coordinator.membership import Membership
from srm_coordinator.ports import Beats, LogWriter

log = logging.getLogger("srm_coordinator.service")


@dataclass(frozen=True)
class CommandResult:
    """``before`` is set when the log already held the command (a retry): nothing new."""

    offset: int
    changes: tuple[str, ...]
    before: AppliedCommand | None = None


class TermEnded(Exception):
    """The term's last append failed: the command may or may not be in the log."""


class LeaderTerm:
    """The leader's part of a coordinator for as long as its writer is not fenced."""

    def __init__(
        self,
        coordinator_id: str,
        *,
        writer: LogWriter,
        beats: Beats,
        membership: Membership,
        leader: Leader,
        follower: LogFollower,
        clock: Callable[[], float],
        aliases: Sequence[str],
    ) -> None:
        self.id = coordinator_id
        self.writer = writer
        self.beats = beats
        self.membership = membership
        self.leader = leader
        self.follower = follower
        self.clock = clock
        self.aliases = aliases
        # Why the term ended (its writer and beats are closed then), or None.
        self.ended: str | None = None

    @property
    def state(self) -> ControlState:
        return self.follower.state

    def observe(self) -> None:
        """Read the drivers' beats; liveness by this coordinator's monotonic clock (a
        wall-clock step must not declare a live driver dead, or hide a dead one)."""
        self.membership.observe(self.beats.poll(0), self.leader.tick_ms())

    def decide_round(self, flows: set[str]) -> float | None:
        """Rediscover ``flows``, decide a round and append it: how long that took in ms
        when it appended events, else None (check :attr:`ended` after)."""
        self.leader.refresh(flows)
        started = time.monotonic()
        round_ = self.leader.round(self.state)
        if self.commit(round_) and round_.envelopes:
            return (time.monotonic() - started) * 1000
        return None

    def carry_out(self, command: Command, by: str, trace: TraceContext | None) -> CommandResult:
        """Decide ``command`` on the state as folded and append its events; a retry of
        one the log holds is answered from the log. Raises ``CommandRejected`` (nothing
        appended) or :class:`TermEnded` (the append failed; the term is over)."""
        before = applied_before(self.state, command)
        if before is not None:  # a retry of a command in the log: applied once
            return CommandResult(self.state.offset, (), before)
        round_ = Round(self.state, by, int(self.clock() * 1000))
        round_.add(
            decide(self.state, command, aliases=self.aliases),
            command=command_id(command) or uuid.uuid4().hex,
            trace=trace,
        )
        if not round_.envelopes:
            return CommandResult(self.state.offset, ())
        if not self.commit(round_):
            raise TermEnded(self.ended)
        if isinstance(command, ChangePatterns):
            self.leader.refresh([command.flow], trace)
        return CommandResult(self.state.offset, tuple(describe(e) for e in round_.envelopes))

    def commit(self, round_: Round) -> bool:
        """Append the round's events and fold them; False when the append failed, which
        ends the term."""
        if not round_.envelopes:
            return True
        if self.ended is not None:
            return False
        try:
            written = self.writer.append(round_.envelopes)
        except Fenced as exc:
            log.error("%s: %s; the event log is unchanged by this coordinator", self.id, exc)
            self.end("fenced")
            return False
        except ControlLogError as exc:
            # The producer may be stuck: after a commit that timed out librdkafka refuses
            # abort_transaction and begin_transaction until commit is called again. A new
            # writer (fence, replay, take-over round) is the one way back that is sure to
            # work, and it also redoes the round's decisions from the log as it is.
            log.error("%s: %s (taking over again with a new writer)", self.id, exc)
            self.end("cannot append to the event log")
            return False
        for envelope in written:
            log.info("%s: %s", self.id, describe(envelope))
        self.follower.fold(written)
        self.leader.committed(round_, self.state)
        return True

    def end(self, why: str) -> None:
        """Close what only a leader holds (once); ``why`` is kept in :attr:`ended`."""
        if self.ended is not None:
            return
        self.ended = why
        for resource in (self.writer, self.beats):
            try:
                resource.close()
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
        self.leader.discovery.close()
