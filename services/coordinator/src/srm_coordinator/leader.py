"""What the leading coordinator decides, as events: take-over, membership, task configs,
assignment. Everything decided in one round is appended in one transaction.

The decisions are folded into a working copy of the state as they are made, so that a
round sees its own earlier decisions (a driver that joined gets tasks in the same round).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from srm_common.adapters.discovery import Discovery, DiscoveryPending
from srm_common.config.control import effective_flow
from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.control.assignment import rebalance
from srm_common.control.commands import config_diff
from srm_common.control.events import (
    CoordinatorElected,
    Envelope,
    Event,
    FlowBaseline,
)
from srm_common.control.planning import plan_flow_tasks, tasks_gaining_partitions
from srm_common.control.state import ControlState, apply
from srm_common.errors import SrmError

from srm_coordinator.membership import Membership

log = logging.getLogger(__name__)

RETRY_MS = 5000


def baseline_of(config: SrmConfig) -> dict[str, FlowBaseline]:
    """What the config file says about each flow's lists and switch."""
    return {
        flow.name: FlowBaseline(
            enabled=flow.enabled,
            topics=tuple(flow.topics),
            topics_exclude=tuple(flow.topics_exclude),
            groups=tuple(flow.groups),
            groups_exclude=tuple(flow.groups_exclude),
        )
        for flow in config.flows.values()
    }


class Round:
    """Events decided so far in one round, folded into ``state`` as they are added."""

    def __init__(self, state: ControlState, by: str, now_ms: int) -> None:
        self.state = state
        self.by = by
        self.now_ms = now_ms
        self.envelopes: list[Envelope] = []

    def add(self, events: Iterable[Event], *, by: str | None = None, command: str | None = None):
        for event in events:
            envelope = Envelope(event, self.now_ms, by or self.by, command)
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
        discovery: Discovery,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.coordinator = coordinator
        self.url = url
        self.membership = membership
        self.discovery = discovery
        self.clock = clock
        self.flows: dict[str, FlowConfig] = {f.name: f for f in config.flows.values()}
        self._due: dict[str, int] = {name: 0 for name in self.flows}

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def take_over(self, state: ControlState) -> Round:
        """Announce the new term and bring the log in line with the config file."""
        now = self.now_ms()
        round_ = Round(state, f"coordinator {self.coordinator}", now)
        epoch = (state.leader.epoch if state.leader else 0) + 1
        round_.add([CoordinatorElected(self.coordinator, self.url, epoch)])
        round_.add(
            config_diff(round_.state, baseline_of(self.config), self.config.source),
            by=f"config file {self.config.source}",
        )
        self.membership.adopt(round_.state, now)
        self._due = {name: 0 for name in self.flows}
        return round_

    def refresh(self, flows: Iterable[str]) -> None:
        """Rediscover these flows from a listing taken from now on (a command or a
        driver asked)."""
        now = self.now_ms()
        for name in flows:
            if name in self._due:
                self._due[name] = now

    def round(self, state: ControlState) -> Round:
        """Membership, then task configs of flows due, then assignment."""
        now = self.now_ms()
        round_ = Round(state, f"coordinator {self.coordinator}", now)
        round_.add(self.membership.changes(round_.state, now))
        must_revoke: set[str] = set()
        for name in sorted(self.flows):
            if self._due[name] <= now:
                must_revoke |= self._plan(round_, name, now)
        change = rebalance(
            round_.state,
            sorted(round_.state.drivers),
            self.membership.reports,
            must_revoke=must_revoke,
        )
        if change:
            round_.add([change.to_event(round_.state)])
        return round_

    def _plan(self, round_: Round, name: str, now: int) -> set[str]:
        flow = effective_flow(self.flows[name], round_.state.flow(name))
        try:
            if flow.enabled:
                # Due since _due[name]: a listing older than that may miss the change.
                partitions, groups = self.discovery.discover(flow, self._due[name])
            else:
                partitions, groups = [], []
        except DiscoveryPending:
            return set()  # still due: the next round looks again
        except SrmError as exc:
            log.error("%s (retrying in %d s)", exc, RETRY_MS // 1000)
            self._due[name] = now + RETRY_MS
            return set()
        interval = flow.refresh_topics_interval_seconds if flow.refresh_topics_enabled else 10**9
        self._due[name] = now + interval * 1000
        previous = round_.state.tasks.get(name)
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
        round_.add([planned.to_event()])
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
