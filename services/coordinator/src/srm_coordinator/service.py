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
import uuid

from srm_common import telemetry
from srm_common.config.control import ControlSettings
from srm_common.config.model import SrmConfig
from srm_common.control.commands import (
    Command,
    CommandRejected,
)
from srm_common.control.state import ControlState
from srm_common.errors import ControlLogError, ControlTopicRefused, SrmError
from srm_common.log_follower import Folded, LogFollower

from srm_coordinator.command_queue import CommandQueue, Queued
from srm_coordinator.leader import Leader
from srm_coordinator.leader_term import CommandResult, LeaderTerm, TermEnded
from srm_coordinator.log_memory import LogMemory
from srm_coordinator.membership import Membership
from srm_coordinator.migration import Mover
from srm_coordinator.ports import Adapters

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


class Coordinator:
    """The coordinator service; :meth:`run` blocks until ``stop`` is set.

    What outlives a term of leading stays here: reading the log (replay, retries while
    its cluster does not answer), the election loop, the command queue and the views the
    HTTP API reads. The leader's part is :class:`srm_coordinator.leader_term.LeaderTerm`
    and the queue's :class:`srm_coordinator.command_queue.CommandQueue`. (About 330 lines:
    the rest is the loop's steps and the API's views over the same follower and term.)
    """

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
        self.memory = memory
        self.took_over_at: float | None = None
        self._lock = threading.Lock()
        self._commands = CommandQueue()
        self._notices: queue.Queue[str] = queue.Queue()
        # The term of leading the log, while this instance leads it.
        self._term: LeaderTerm | None = None
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
    def leading(self) -> bool:
        return self._term is not None

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
        :class:`CommandRejected` or :class:`CommandTimedOut` otherwise
        (:class:`srm_coordinator.command_queue.CommandQueue`: a command not reached in
        time is withdrawn)."""
        if not self.leads():
            raise NotLeader(self._leader_url())
        return self._commands.submit(command, by, timeout)

    def notify(self, flow: str) -> None:
        """A driver saw the source change under ``flow``: rediscover it."""
        if not self.leading:
            raise NotLeader(self._leader_url())
        self._notices.put(flow)

    def members(self) -> dict[str, dict[str, object]]:
        term = self._term
        if term is None:
            return {}
        membership = term.membership
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
        term = self._term
        return term.leader.config_drift if term is not None else None

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
        membership = Membership(self.settings.session_timeout_ms)
        leader = Leader(
            self.config,
            coordinator=self.id,
            url=self.url,
            membership=membership,
            discovery=self.adapters.discovery(),
            control=self.settings,
            clock=self.adapters.clock,
            monotonic=self.adapters.monotonic,
            apply_config=self.apply_config,
            migration=migration,
        )
        assert self.follower is not None
        term = LeaderTerm(
            self.id,
            writer=writer,
            beats=beats,
            membership=membership,
            leader=leader,
            follower=self.follower,
            clock=self.adapters.clock,
            aliases=self.config.aliases,
        )
        self._term = term
        if not term.commit(leader.take_over(self.state)):
            self._step_down(term.ended or "cannot append to the event log")
        else:
            self.took_over_at = self.adapters.clock()
            self._mover.committed(leader.migrated_to)
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
        term, self._term = self._term, None
        if term is not None:
            term.end(why)
        self._refuse_queued()

    def _refuse_queued(self) -> None:
        self._commands.refuse_all(lambda: NotLeader(self._leader_url()))

    def _round(self) -> None:
        term = self._term
        assert term is not None
        self._mover.mark(self.id)
        term.observe()
        self._run_commands()
        if self._term is not term:
            return  # a command's append failed: the term is over
        flows: set[str] = set()
        while not self._notices.empty():
            flows.add(self._notices.get_nowait())
        took = term.decide_round(flows)
        if term.ended is not None:
            self._step_down(term.ended)
        elif took is not None:
            times = self.round_times
            times["rounds"] = int(times["rounds"]) + 1
            times["last_ms"] = round(took, 1)
            times["max_ms"] = round(max(float(times["max_ms"]), took), 1)

    def _run_commands(self) -> None:
        for queued in self._commands.take():
            term = self._term
            if term is None:  # the previous command's append ended the term
                queued.outcome.set_exception(NotLeader(self._leader_url()))
                continue
            # The span continues the request's trace; the events carry the span's context.
            with telemetry.span(
                f"srm-coordinator {type(queued.command).__name__}", parent=queued.trace
            ):
                self._carry_out(term, queued)

    def _carry_out(self, term: LeaderTerm, queued: Queued) -> None:
        try:
            result = term.carry_out(queued.command, queued.by, telemetry.context_now())
            queued.outcome.set_result(result)
        except CommandRejected as exc:
            queued.outcome.set_exception(exc)
        except TermEnded:
            queued.outcome.set_exception(NotLeader(self._leader_url(), maybe_applied=True))
            self._step_down(term.ended or "cannot append to the event log")
