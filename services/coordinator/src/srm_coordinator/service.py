"""The coordinator of one target cluster's log: follows it, leads it when elected.

A coordinator process runs one of these per target cluster it serves
(:mod:`srm_coordinator.site`), each on its own thread, so a cluster that does not answer
holds up only its own log. Every instance folds the log (read_committed) into the same
state. The elected one also fences the transactional id, decides rounds (membership,
task configs, assignment of the flows into its target) and carries out commands; a
standby answers commands with the leader's URL. The log is the only store: a restarted
coordinator replays it. Its Kafka clients, election, discovery and clocks are ports it
receives (:mod:`srm_coordinator.bootstrap` builds them).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from srm_common import telemetry
from srm_common.config.control import ControlSettings
from srm_common.config.model import SrmConfig
from srm_common.control.commands import (
    ChangePatterns,
    Command,
    CommandRejected,
    applied_before,
    command_id,
    decide,
)
from srm_common.control.events import describe
from srm_common.control.state import AppliedCommand, ControlState
from srm_common.errors import ControlLogError, ControlTopicRefused, Fenced, SrmError
from srm_common.log_follower import Folded, LogFollower
from srm_common.tracecontext import TraceContext

from srm_coordinator.leader import Leader, Round
from srm_coordinator.log_memory import LogMemory
from srm_coordinator.membership import Membership
from srm_coordinator.migration import Mover
from srm_coordinator.ports import Adapters, Beats, LogWriter

log = logging.getLogger(__name__)

ROUND_SECONDS = 0.2
RETRY_S = 5.0  # a log whose cluster does not answer is opened (or taken over) again


class NotLeader(SrmError):
    """This instance does not lead; ``leader_url`` is where the leader answers, if known.
    ``maybe_applied``: it stopped leading while appending the command, which may be in
    the log (a retry under the command's id tells)."""

    def __init__(self, leader_url: str | None, *, maybe_applied: bool = False) -> None:
        super().__init__(leader_url)
        self.leader_url = leader_url
        self.maybe_applied = maybe_applied


class CommandTimedOut(SrmError):
    """The leader did not carry out a command in time; the message says whether it may
    still have been applied (``maybe_applied``)."""

    def __init__(self, message: str, *, maybe_applied: bool) -> None:
        super().__init__(message)
        self.maybe_applied = maybe_applied


@dataclass(frozen=True)
class CommandResult:
    """``before`` is set when the log already held the command (a retry): nothing new."""

    offset: int
    changes: tuple[str, ...]
    before: AppliedCommand | None = None


# A command, who asked, the trace context of the request that brought it, its outcome.
Queued = tuple[Command, str, TraceContext | None, "Future[CommandResult]"]


class Coordinator:
    """The coordinator service; :meth:`run` blocks until ``stop`` is set."""

    def __init__(
        self,
        config: SrmConfig,
        settings: ControlSettings,
        adapters: Adapters,
        *,
        coordinator_id: str | None = None,
        memory: LogMemory | None = None,
        apply_config: bool = False,
    ) -> None:
        self.config = config
        self.apply_config = apply_config
        self.settings = settings
        # The target cluster whose log this is (flows into it), and the log's name.
        self.target = settings.cluster
        self.name = settings.name
        self.adapters = adapters
        self.id = coordinator_id or f"coordinator-{uuid.uuid4().hex[:8]}"
        self.url = ""
        self.stop = threading.Event()
        self.leading = False
        self.memory = memory
        self.took_over_at: float | None = None
        self._lock = threading.Lock()
        self._commands: queue.Queue[Queued] = queue.Queue()
        self._notices: queue.Queue[str] = queue.Queue()
        self._writer: LogWriter | None = None
        self._beats: Beats | None = None
        self._leader: Leader | None = None
        self._membership: Membership | None = None
        # The event log, folded; stepped by the loop (a coordinator folds before it decides).
        self.follower: LogFollower | None = None
        # Rounds that appended events: how long the last and the longest took to decide
        # and commit, in ms (GET /v1/leader, under this log; make bench-scale reads them).
        self.round_times: dict[str, float | int] = {"rounds": 0, "last_ms": 0.0, "max_ms": 0.0}
        # The move of this target's flows from the single log of an earlier release.
        self._mover = Mover(self.target, adapters.legacy, adapters.monotonic)
        # Why the log cannot be opened now (its cluster does not answer), if so.
        self.unreachable: str | None = "starting"
        self._retry_lead_at = 0.0

    @property
    def state(self) -> ControlState:
        follower = self.follower
        return follower.state if follower is not None else ControlState()

    # -- for the HTTP API (other threads) ---------------------------------------------

    def leads(self) -> bool:
        """Leading, as the API says: never while the log cannot be followed (lost, or of
        a newer SRM), even in the moment before the loop steps down."""
        follower = self.follower
        return self.leading and (follower is None or follower.problem is None)

    def snapshot(self) -> ControlState:
        return self.state

    def submit(self, command: Command, by: str, timeout: float = 20.0) -> CommandResult:
        """Carry out ``command`` on the leader; :class:`NotLeader`,
        :class:`CommandRejected` or :class:`CommandTimedOut` otherwise.

        A command that waited ``timeout`` seconds in the queue is withdrawn, so a
        caller told "timed out" is never surprised by it being applied later."""
        if not self.leads():
            raise NotLeader(self._leader_url())
        future: Future[CommandResult] = Future()
        self._commands.put((command, by, telemetry.context_now(), future))
        try:
            return future.result(timeout)
        except FutureTimeout:
            if future.cancel():
                raise CommandTimedOut(
                    f"the leader did not get to the command within {timeout:g} s"
                    " (is the control cluster slow?); it was withdrawn and not applied:"
                    " try again",
                    maybe_applied=False,
                ) from None
        try:  # the loop had started on it: wait for the outcome a while longer
            return future.result(timeout / 2)
        except FutureTimeout:
            raise CommandTimedOut(
                "the leader is still writing the command to the event log; it may yet be"
                " applied: check with --list or audit before trying again",
                maybe_applied=True,
            ) from None

    def notify(self, flow: str) -> None:
        """A driver saw the source change under ``flow``: rediscover it."""
        if not self.leading:
            raise NotLeader(self._leader_url())
        self._notices.put(flow)

    def members(self) -> dict[str, dict[str, object]]:
        membership = self._membership
        if membership is None or not self.leading:
            return {}
        return {
            driver: {
                "last_seen_ms": membership.last_seen.get(driver),
                "generation": report.generation,
                "running": sorted(report.running),
            }
            # A copy: the main loop adds and removes reports while this thread reads.
            for driver, report in list(membership.reports.items())
        }

    def config_drift(self) -> str | None:
        """Why this coordinator, leading, did not apply its configuration file."""
        leader = self._leader
        return leader.config_drift if self.leading and leader is not None else None

    def log_status(self) -> dict[str, object]:
        """The event log as this coordinator reads it: identity, problem, skipped records."""
        follower = self.follower
        reader = follower.reader if follower is not None else None
        if reader is None:
            return {"problem": self.unreachable or "starting", "problem_kind": "unreachable"}
        return reader.status()

    def _leader_url(self) -> str | None:
        leader = self.snapshot().leader
        return leader.url if leader and leader.coordinator != self.id else None

    # -- the loop ---------------------------------------------------------------------

    def replay(self, url: str) -> LogFollower:
        """Open the event log and fold it to its end; ``url`` is this instance's API."""
        self.url = url
        # The memory file names the last log: if it is gone, say so, never start anew.
        known = self.memory.known(self.name) if self.memory is not None else None
        self.adapters.prepare(known is None)
        follower = LogFollower(
            lambda: self.adapters.reader(f"{self.id}-log-{self.target}", known),
            name=f"the log of {self.name}",
            on_fold=self._remember,
        )
        follower.read_to_end()
        self.follower = follower
        self.unreachable = None
        log.info(
            "%s: replayed %d events of the log of %s; state digest %s",
            self.id,
            self.state.offset + 1,
            self.name,
            self.state.digest()[:12],
        )
        return follower

    def _replay_until_read(self, url: str) -> LogFollower | None:
        """Replay, again every RETRY_S while the log's cluster does not answer (the other
        targets' coordinators run meanwhile); None when stopped first."""
        while not self.stop.is_set():
            try:
                return self.replay(url)
            except ControlTopicRefused:
                raise  # a topic of a wrong shape: the message says how to fix it
            except ControlLogError as exc:
                if self.unreachable != str(exc):
                    log.warning("%s: %s (trying again every %g s)", self.id, exc, RETRY_S)
                self.unreachable = str(exc)
                self.stop.wait(RETRY_S)
        return None

    def run(self, url: str) -> None:
        follower = self._replay_until_read(url)
        if follower is None:
            return
        election = self.adapters.election(self.id)
        try:
            while not self.stop.is_set():
                try:
                    follower.step(0.05)
                except ControlLogError as exc:
                    # The reader keeps the events it read before the error (see poll).
                    log.warning("%s: %s (retrying)", self.id, exc)
                    self.stop.wait(1)
                    continue
                problem = follower.problem
                # A lost log or one of a newer SRM: keep the last state, never lead it.
                if problem is not None and self.leading:
                    self._step_down(problem.message)
                election.allow(problem is None)
                if election.leading and not self.leading:
                    self.lead()
                elif self.leading and not election.leading:
                    self._step_down("lost the election")
                if self.leading:
                    self._round()
                else:
                    self._refuse_queued()
                self.stop.wait(ROUND_SECONDS)
        finally:
            if self.leading:
                self._step_down("stopping")
            election.close()
            follower.close()

    def _remember(self, folded: Folded) -> None:
        """The memory file follows the log id the state holds."""
        if self.memory is not None and folded.fresh:
            try:
                self.memory.remember(self.name, folded.state.log_id)
            except SrmError as exc:
                log.error("%s: %s (retrying with the next events)", self.id, exc)

    def lead(self) -> None:
        """Take over (after :meth:`replay`): fence the writer, read the log to its end,
        append the take-over round; the loop calls it when this instance is elected."""
        started = self.adapters.monotonic()
        if started < self._retry_lead_at:
            return
        writer = self.adapters.writer(f"{self.id}-writer-{self.target}")
        try:
            writer.fence()
            # The old leader's open transaction is aborted now: the log's end is final.
            self._catch_up()
            migration = self._mover.read(self.state)
            now_ms = int(self.adapters.clock() * 1000)
            beats = self.adapters.beats(
                f"{self.id}-beats-{self.target}", now_ms - self.settings.session_timeout_ms
            )
        except ControlLogError as exc:
            log.error("%s: cannot take over the log of %s: %s", self.id, self.name, exc)
            writer.close()
            self._retry_lead_at = started + RETRY_S
            return
        self._writer = writer
        self._beats = beats
        self._membership = Membership(self.settings.session_timeout_ms)
        self._leader = Leader(
            self.config,
            coordinator=self.id,
            url=self.url,
            membership=self._membership,
            discovery=self.adapters.discovery(),
            control=self.settings,
            clock=self.adapters.clock,
            monotonic=self.adapters.monotonic,
            apply_config=self.apply_config,
            migration=migration,
        )
        self.leading = True
        if self._commit(self._leader.take_over(self.state)):
            self.took_over_at = self.adapters.clock()
            self._mover.committed(self._leader.migrated_to)
            log.info(
                "%s: leading the log of %s (epoch %d) after %.1f s; replayed state digest %s",
                self.id,
                self.name,
                self.state.leader.epoch if self.state.leader else 0,
                self.adapters.monotonic() - started,
                self.state.digest()[:12],
            )

    def _catch_up(self, timeout: float = 30.0) -> None:
        """Fold the log up to where it ends now, of the topic the reader knows; else
        :class:`ControlLogError` (a problem the reader reports then, or a slow log)."""
        follower = self.follower
        assert follower is not None
        end = self.adapters.log_end()
        target = end.query()
        if end.topic_id() != follower.topic_id:
            raise ControlLogError("the event log topic changed under this coordinator")
        deadline = self.adapters.monotonic() + timeout
        while 0 < target and follower.position < target and follower.problem is None:
            if self.adapters.monotonic() > deadline:
                raise ControlLogError(f"could not read the event log to offset {target}")
            follower.step(0.1)
        problem = follower.problem
        if problem is not None:
            raise ControlLogError(problem.message)

    def _step_down(self, why: str) -> None:
        log.warning("%s: no longer leading: %s", self.id, why)
        self.leading = False
        for resource in (self._writer, self._beats):
            if resource is not None:
                try:
                    resource.close()
                except Exception:  # noqa: BLE001 - best effort on the way out
                    pass
        self._writer = self._beats = None
        if self._leader is not None:
            self._leader.discovery.close()
        self._leader = None
        self._refuse_queued()

    def _refuse_queued(self) -> None:
        while True:
            try:
                _command, _by, _trace, future = self._commands.get_nowait()
            except queue.Empty:
                return
            if future.set_running_or_notify_cancel():
                future.set_exception(NotLeader(self._leader_url()))

    def _round(self) -> None:
        assert self._leader is not None and self._beats is not None
        assert self._membership is not None
        self._mover.mark(self.id)
        # Liveness by this coordinator's monotonic clock (a wall-clock step must not
        # declare a live driver dead, or hide a dead one).
        self._membership.observe(self._beats.poll(0), self._leader.tick_ms())
        self._run_commands()
        if not self.leading:
            return  # a command's append was fenced: _leader is gone
        flows: set[str] = set()
        while not self._notices.empty():
            flows.add(self._notices.get_nowait())
        self._leader.refresh(flows)
        started = time.monotonic()
        round_ = self._leader.round(self.state)
        if self._commit(round_) and round_.envelopes:
            took = (time.monotonic() - started) * 1000
            times = self.round_times
            times["rounds"] = int(times["rounds"]) + 1
            times["last_ms"] = round(took, 1)
            times["max_ms"] = round(max(float(times["max_ms"]), took), 1)

    def _run_commands(self) -> None:
        assert self._leader is not None
        while self.leading:
            try:
                command, by, trace, future = self._commands.get_nowait()
            except queue.Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue  # withdrawn by submit(): its caller was told it timed out
            # The span continues the request's trace; the events carry the span's context.
            with telemetry.span(f"srm-coordinator {type(command).__name__}", parent=trace):
                self._carry_out(command, by, future)

    def _carry_out(self, command: Command, by: str, future: Future[CommandResult]) -> None:
        assert self._leader is not None
        before = applied_before(self.state, command)
        if before is not None:  # a retry of a command in the log: applied once
            future.set_result(CommandResult(self.state.offset, (), before))
            return
        trace = telemetry.context_now()
        round_ = Round(self.state, by, int(self.adapters.clock() * 1000))
        try:
            round_.add(
                decide(self.state, command, aliases=self.config.aliases),
                command=command_id(command) or uuid.uuid4().hex,
                trace=trace,
            )
        except CommandRejected as exc:
            future.set_exception(exc)
            return
        if not round_.envelopes:
            future.set_result(CommandResult(self.state.offset, ()))
            return
        if self._commit(round_):
            if isinstance(command, ChangePatterns):
                self._leader.refresh([command.flow], trace)
            future.set_result(
                CommandResult(self.state.offset, tuple(describe(e) for e in round_.envelopes))
            )
        else:
            future.set_exception(NotLeader(self._leader_url(), maybe_applied=True))

    def _commit(self, round_: Round) -> bool:
        """Append the round's events; False (and no longer leading) when it failed."""
        if not round_.envelopes:
            return True
        assert self._writer is not None
        try:
            written = self._writer.append(round_.envelopes)
        except Fenced as exc:
            log.error("%s: %s; the event log is unchanged by this coordinator", self.id, exc)
            self._step_down("fenced")
            return False
        except ControlLogError as exc:
            # The producer may be stuck: after a commit that timed out librdkafka refuses
            # abort_transaction and begin_transaction until commit is called again. A new
            # writer (fence, replay, take-over round) is the one way back that is sure to
            # work, and it also redoes the round's decisions from the log as it is.
            log.error("%s: %s (taking over again with a new writer)", self.id, exc)
            self._step_down("cannot append to the event log")
            return False
        for envelope in written:
            log.info("%s: %s", self.id, describe(envelope))
        assert self.follower is not None
        self.follower.fold(written)
        if self._leader is not None:
            self._leader.committed(round_, self.state)
        return True
