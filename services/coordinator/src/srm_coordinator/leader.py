"""What the leading coordinator decides, as events: take-over, membership, task configs,
assignment. Everything decided in one round is appended in one transaction.

The decisions are folded into a working copy of the state as they are made, so that a
round sees its own earlier decisions (a driver that joined gets tasks in the same round).

**Traces.** A command that changed a flow's lists leaves its trace context with the
flow (:meth:`Leader.refresh`); the flow's next task configs and the assignments that
hand its tasks out carry it, until every task of the flow is assigned again (or
``TRACE_FOLLOW_MS`` passed): so the driver that starts copying a topic an operator
added logs the operator's trace id.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace

from srm_common.config.control import ControlSettings, effective_flow
from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.control.assignment import rebalance
from srm_common.control.commands import config_diff, config_drift
from srm_common.control.events import (
    AssignmentChanged,
    CoordinatorElected,
    Envelope,
    Event,
    FlowBaseline,
    LogStarted,
)
from srm_common.control.planning import plan_flow_tasks, tasks_gaining_partitions
from srm_common.control.refresh import DiscoveryPending, Due, RefreshSchedule, refreshed
from srm_common.control.state import ControlState, apply
from srm_common.errors import SrmError
from srm_common.tracecontext import TraceContext

from srm_coordinator.membership import Membership
from srm_coordinator.migration import Migration
from srm_coordinator.ports import Discoverer

log = logging.getLogger(__name__)

RETRY_MS = 5000
# How long the events a command caused (task configs, assignments) carry its trace.
TRACE_FOLLOW_MS = 60_000


def baseline_of(config: SrmConfig, target: str | None = None) -> dict[str, FlowBaseline]:
    """What the config file says about each flow's lists and switch (of the flows into
    ``target`` only, when given: a target's log holds those)."""
    return {
        flow.name: FlowBaseline(
            enabled=flow.enabled,
            topics=tuple(flow.topics),
            topics_exclude=tuple(flow.topics_exclude),
            groups=tuple(flow.groups),
            groups_exclude=tuple(flow.groups_exclude),
        )
        for flow in config.flows.values()
        if target is None or flow.target == target
    }


class Round:
    """Events decided so far in one round, folded into ``state`` as they are added.
    ``freed`` maps tasks taken from drivers that left without their word to how long
    their writes must be waited out (from when the round is committed)."""

    def __init__(self, state: ControlState, by: str, now_ms: int) -> None:
        self.state = state
        self.by = by
        self.now_ms = now_ms
        self.envelopes: list[Envelope] = []
        self.freed: dict[str, int] = {}

    def add(
        self,
        events: Iterable[Event],
        *,
        by: str | None = None,
        command: str | None = None,
        trace: TraceContext | None = None,
    ):
        for event in events:
            envelope = Envelope(event, self.now_ms, by or self.by, command, trace=trace)
            self.envelopes.append(envelope)
            self.state = apply(self.state, envelope)


class Leader:
    """The leader's decisions; the service appends what they produce."""

    def __init__(
        self,
        config: SrmConfig,
        *,
        coordinator: str,
        url: str,
        membership: Membership,
        discovery: Discoverer,
        control: ControlSettings,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        apply_config: bool = False,
        migration: Migration | None = None,
    ) -> None:
        self.config = config
        # The target whose log this leader leads: it plans and assigns the flows into it.
        self.target = control.cluster
        self.migration = migration
        # The id of the log this take-over started with the old log's configuration: the
        # old log is told once the round is committed (None: nothing moved).
        self.migrated_to: str | None = None
        self.apply_config = apply_config
        # Why this coordinator's file was not applied at its take-over (None: it was,
        # or it equals the log's baseline).
        self.config_drift: str | None = None
        self.coordinator = coordinator
        self.url = url
        self.membership = membership
        self.discovery = discovery
        self.control = control
        self.clock = clock
        self.monotonic = monotonic
        self.flows: dict[str, FlowConfig] = {
            f.name: f for f in config.flows.values() if f.target == self.target
        }
        # Topics and groups of each flow are due on their own intervals.
        self._due = {name: RefreshSchedule() for name in self.flows}
        # Task -> monotonic time (s) before which it must not run anywhere: its last
        # driver left without its word and may still write until then.
        self.waiting: dict[str, float] = {}
        # Monotonic time (s) before which no task runs anywhere: a log just restored
        # knows nothing of what drivers of the lost log may still write.
        self.hold_until = 0.0
        # Flow -> the trace context of the command that changed it, and until when (tick
        # ms) the events it causes carry it; flows whose task configs it already carried.
        self.traces: dict[str, tuple[TraceContext, int]] = {}
        self._traced_plans: set[str] = set()

    def now_ms(self) -> int:
        """Wall clock, for event times only."""
        return int(self.clock() * 1000)

    def tick_ms(self) -> int:
        """Monotonic clock, for every timeout and liveness decision."""
        return int(self.monotonic() * 1000)

    def committed(self, round_: Round, state: ControlState) -> None:
        """The round is in the log (``state`` folds it): start waiting out the writes of
        the tasks it freed. The log is in the cluster the tasks write into, so a driver
        renewing its lease there sees the removal; its lease ends ``lease.ms`` after the
        commit at the latest (docs/design.md, sections 1 and 7)."""
        now = self.monotonic()
        for task, wait_ms in round_.freed.items():
            self.waiting[task] = max(self.waiting.get(task, 0.0), now + wait_ms / 1000)
        if round_.freed:
            longest = max(round_.freed.values()) / 1000
            log.info(
                "%d tasks wait %.1f s before they move: their driver may still write until then",
                len(round_.freed),
                longest,
            )

    def _waiting_now(self) -> set[str]:
        now = self.monotonic()
        self.waiting = {task: until for task, until in self.waiting.items() if until > now}
        return set(self.waiting)

    def _held(self, state: ControlState) -> set[str]:
        return set(state.all_task_ids()) if self.monotonic() < self.hold_until else set()

    def _wait_out_ms(self, lease_ms: int, write_timeout_ms: int) -> int:
        """The leader's wait for a departed driver, with the larger of its reported
        timings and this coordinator's configured ones."""
        return replace(
            self.control,
            lease_ms=max(lease_ms, self.control.lease_ms),
            write_timeout_ms=max(write_timeout_ms, self.control.write_timeout_ms),
        ).wait_out_ms

    def take_over(self, state: ControlState) -> Round:
        """Announce the new term and bring the log in line with the config file; a new
        log first takes over what the single log of an earlier release says of its
        flows (:mod:`srm_coordinator.migration`)."""
        now = self.now_ms()
        round_ = Round(state, f"coordinator {self.coordinator}", now)
        self.migrated_to = None
        migration = self.migration
        if state.offset < 0 and migration is not None and not migration.moved(self.target):
            log_id, events = migration.events(self.target)
            round_.add(events, by=f"coordinator {self.coordinator} (migration)")
            self.migrated_to = log_id
            log.info(
                "%s: the log of %s starts with the configuration of its flows from %s",
                self.coordinator,
                self.target,
                migration.where,
            )
        elif state.log_id is None:
            # The log's identity: its first event (or, in a log older than log ids, given
            # by the first leader that reads it).
            round_.add([LogStarted(uuid.uuid4().hex, None, "", self.target)])
        epoch = (state.leader.epoch if state.leader else 0) + 1
        round_.add([CoordinatorElected(self.coordinator, self.url, epoch)])
        baseline = baseline_of(self.config, self.target)
        drift = config_drift(round_.state, baseline, self.config.source)
        self.config_drift = None if self.apply_config else drift
        if self.config_drift is not None:
            log.warning("%s: %s", self.coordinator, self.config_drift)
        else:
            round_.add(
                config_diff(round_.state, baseline, self.config.source),
                by=f"config file {self.config.source}",
            )
        self.membership.adopt(round_.state, self.tick_ms())
        self._due = {name: RefreshSchedule() for name in self.flows}
        # A previous leader may have freed tasks a moment ago: every task without a
        # driver waits out the longest writes a driver could still make.
        wait = self._wait_out_ms(0, 0)
        if (state.leader is None and state.offset >= 0) or self.migrated_to is not None:
            # Events but never a leader: a log srm-control restore wrote (or the
            # configuration moved from an earlier release's log). Drivers of the old log
            # stopped renewing their leases when they lost it (or when this coordinator
            # joined the election); whatever task they ran, wait them out.
            self.hold_until = self.monotonic() + wait / 1000
            log.info(
                "a restored or migrated log: no task runs for %.1f s (drivers of the old log)",
                wait / 1000,
            )
        round_.freed = {
            task: wait
            for task in round_.state.all_task_ids()
            if task not in round_.state.assignment
        }
        return round_

    def refresh(self, flows: Iterable[str], trace: TraceContext | None = None) -> None:
        """Rediscover these flows from a listing taken from now on (a command or a
        driver asked); ``trace``: the command's, for the events this causes."""
        now = self.tick_ms()
        for name in flows:
            if name in self._due:
                self._due[name].ask(now)
                if trace is not None:
                    self.traces[name] = (trace, now + TRACE_FOLLOW_MS)
                    self._traced_plans.discard(name)

    def round(self, state: ControlState) -> Round:
        """Membership, then task configs of flows due, then assignment."""
        round_ = Round(state, f"coordinator {self.coordinator}", self.now_ms())
        now = self.tick_ms()  # schedules and listings: a wall clock step moves neither
        self.traces = {f: t for f, t in self.traces.items() if t[1] > now}
        round_.add(self.membership.changes(round_.state, now))
        for departure in self.membership.departures:
            wait = self._wait_out_ms(departure.lease_ms, departure.write_timeout_ms)
            for task in departure.tasks:
                round_.freed[task] = max(round_.freed.get(task, 0), wait)
        self.membership.departures.clear()
        must_revoke: set[str] = set()
        for name in sorted(self.flows):
            due = self._due[name].due(now)
            if due:
                must_revoke |= self._plan(round_, name, due, now)
        change = rebalance(
            round_.state,
            sorted(round_.state.drivers),
            self.membership.reports,
            must_revoke=must_revoke,
            waiting=self._waiting_now() | set(round_.freed) | self._held(round_.state),
        )
        if change:
            for event in change.to_events(round_.state):
                round_.add([event], trace=self._assignment_trace(round_.state, event))
        self._settle_traces(round_.state)
        return round_

    def _assignment_trace(
        self, state: ControlState, event: AssignmentChanged
    ) -> TraceContext | None:
        """The trace of a traced flow whose tasks this assignment moves."""
        flows = sorted({t.rpartition("|")[0] for t in (*event.assigned, *event.revoked)})
        traced = [f for f in flows if f in self.traces]
        return self.traces[traced[0]][0] if traced else None

    def _settle_traces(self, state: ControlState) -> None:
        """A flow whose traced task configs are written and whose tasks all run
        somewhere is no longer traced: later events are not the command's doing."""
        for name in sorted(self._traced_plans):
            tasks = state.tasks.get(name)
            if tasks is None or all(t in state.assignment for t in tasks.task_ids()):
                self.traces.pop(name, None)
                self._traced_plans.discard(name)

    def _plan(self, round_: Round, name: str, due: Due, now: int) -> set[str]:
        flow = effective_flow(self.flows[name], round_.state.flow(name))
        schedule = self._due[name]
        previous = round_.state.tasks.get(name)
        try:
            if flow.enabled:
                # Only the due half of the listing is used: a short groups interval
                # never moves partitions (srm_common.control.refresh).
                listed = self.discovery.discover(flow, schedule.fresh_after_ms(due))
                partitions, groups = refreshed(previous, due, *listed)
            else:
                partitions, groups = [], []
        except DiscoveryPending:
            return set()  # still due: the next round looks again
        except SrmError as exc:
            log.error("%s (retrying in %d s)", exc, RETRY_MS // 1000)
            schedule.retry(due, now + RETRY_MS)
            return set()
        schedule.listed(flow, due, now)
        planned = plan_flow_tasks(
            name,
            previous,
            partitions,
            groups,
            flow.tasks_max,
            heartbeat=flow.emit_heartbeats_enabled,
        )
        if previous is not None and planned.generation == previous.generation:
            return set()
        traced = self.traces.get(name)
        round_.add(planned.to_events(), trace=traced[0] if traced else None)
        if traced:
            self._traced_plans.add(name)
        log.info(
            "%s: task configs generation %d: %d source tasks over %d partitions,"
            " %d checkpoint tasks",
            name,
            planned.generation,
            len(planned.source),
            len(partitions),
            len(planned.checkpoint),
        )
        return set(tasks_gaining_partitions(previous, planned))
