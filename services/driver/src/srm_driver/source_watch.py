"""A driver's watch of the sources of the flows whose heartbeat task it runs: SRM's
follower-to-leader notification.

Topics every ``refresh.topics.interval.seconds``, groups every
``refresh.groups.interval.seconds`` (each while its switch is on): when the source
matches other partitions or groups than the flow's task configs hold, the leader of the
flow's log is asked to rediscover the flow (``notify``; the leader decides, the driver
only notices). :class:`srm_driver.coordinated_tasks.CoordinatedTaskSource` checks each
such flow on every pass of its assignment.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from srm_common.adapters.discovery import Discovery, DiscoveryError, DiscoveryPending
from srm_common.config.control import effective_flow
from srm_common.config.model import FlowConfig
from srm_common.control.refresh import Due, RefreshSchedule
from srm_common.control.state import ControlState

log = logging.getLogger(__name__)

# Asks the leader of flow ``name``'s log to rediscover it, saying why; False if no
# leader answered.
Notify = Callable[[str, str], bool]


class SourceWatch:
    """Watches the sources of ``flows`` (by name) through ``discovery`` on ``clock``
    (monotonic seconds); a difference from the task configs goes to ``notify``."""

    def __init__(
        self,
        flows: Mapping[str, FlowConfig],
        discovery: Discovery,
        clock: Callable[[], float],
        notify: Notify,
    ) -> None:
        self._flows = flows
        self._discovery = discovery
        self._clock = clock
        self._notify = notify
        self._due: dict[str, RefreshSchedule] = {}

    def check(self, state: ControlState, name: str) -> None:
        """Look at flow ``name``'s source if a listing is due (see the module docstring),
        against the task configs of ``state`` (the flow's log)."""
        flow = effective_flow(self._flows[name], state.flow(name))
        if not flow.enabled:
            return
        now_ms = int(self._clock() * 1000)
        schedule = self._due.setdefault(name, RefreshSchedule())
        due = schedule.due(now_ms)
        due = Due(
            due.topics and flow.refresh_topics_enabled, due.groups and flow.refresh_groups_enabled
        )
        if not due:
            return
        try:
            partitions, groups = self._discovery.discover(flow, schedule.fresh_after_ms(due))
        except DiscoveryPending:
            return  # listing in the background; looked at again on the next pass
        except DiscoveryError as exc:
            log.warning("%s: %s", name, exc)
            partitions = groups = None
        schedule.listed(flow, due, now_ms)
        tasks = state.tasks.get(name)
        if partitions is None or groups is None or tasks is None:
            return
        planned = {tp for task in tasks.source for tp in task.partitions}
        planned_groups = {g for task in tasks.checkpoint for g in task.groups}
        differences = []
        if due.topics and set(partitions) != planned:
            differences.append(f"{len(partitions)} partitions match, {len(planned)} planned")
        if due.groups and set(groups) != planned_groups:
            differences.append(f"{len(groups)} groups match, {len(planned_groups)} planned")
        if differences:
            self._notify(name, "; ".join(differences))

    def close(self) -> None:
        self._discovery.close()
