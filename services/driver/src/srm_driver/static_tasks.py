"""``--standalone``: every task of every enabled flow, planned here from the configuration.

The same planning functions as the coordinator's (:func:`plan_flow_tasks`), on the same
background listings (:class:`Discovery`): topics redone every
``refresh.topics.interval.seconds``, groups every ``refresh.groups.interval.seconds``
(:mod:`srm_common.control.refresh`).
There is no event log: halts and losses are logged (and shown on the REST status), and
an operator resumes a halted partition over the driver's REST API.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from srm_common.adapters.discovery import Discovery, DiscoveryError, DiscoveryPending
from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.control.flow_records import FlowTasks
from srm_common.control.planning import plan_flow_tasks
from srm_common.control.refresh import RefreshSchedule, refreshed
from srm_common.control.task_ids import checkpoint_task_id

from srm_driver.copying.ports import LEASE_CAP_MS, CopyEvent
from srm_driver.copying.state import ResumeRequest
from srm_driver.tasks import Assignment, Report, TopicPartition

log = logging.getLogger(__name__)


class StaticTaskSource:
    """See the module docstring."""

    def __init__(
        self,
        config: SrmConfig,
        discovery: Discovery,
        clock: Callable[[], float] = time.monotonic,
        flows: Mapping[str, FlowConfig] | None = None,
    ) -> None:
        """``flows``: the flows to run (those into the targets a pinned driver serves);
        default every flow of ``config``."""
        self._config = config
        self._discovery = discovery
        self._clock = clock
        self._started = clock()
        self._flows = (
            dict(flows) if flows is not None else {f.name: f for f in config.flows.values()}
        )
        self._tasks: dict[str, FlowTasks] = {}
        self._due = {name: RefreshSchedule() for name in self._flows}
        self._generation = 0
        self._resumes: dict[tuple[str, str, int], ResumeRequest] = {}
        self.changed = threading.Event()

    def start(self, url: str, report: Report) -> None:
        log.info("standalone driver at %s: every task of every enabled flow runs here", url)

    def assignment(self) -> Assignment:
        now_ms = int(self._clock() * 1000)
        changed = False
        for name, flow in self._flows.items():
            schedule = self._due[name]
            due = schedule.due(now_ms)
            if not flow.enabled or not due:
                continue
            previous = self._tasks.get(name)
            try:
                listed = self._discovery.discover(flow, schedule.fresh_after_ms(due))
            except DiscoveryPending:
                continue
            except DiscoveryError as exc:
                log.warning("%s (retrying in 5 s)", exc)
                schedule.retry(due, now_ms + 5000)
                continue
            schedule.listed(flow, due, now_ms)
            partitions, groups = refreshed(previous, due, *listed)
            planned = plan_flow_tasks(
                name, previous, partitions, groups, flow.tasks_max, heartbeat=False
            )
            if previous is None or planned.generation != previous.generation:
                self._tasks[name] = planned
                changed = True
                log.info(
                    "%s: %d source tasks over %d partitions",
                    name,
                    len(planned.source),
                    len(partitions),
                )
        if changed:
            self._generation += 1
        return Assignment(
            generation=self._generation,
            flows=self._flows,
            source={name: tasks.source for name, tasks in self._tasks.items()},
            heartbeats=frozenset(
                name for name, flow in self._flows.items() if flow.emit_heartbeats_enabled
            ),
            checkpoints={
                checkpoint_task_id(name, task.index): task
                for name, tasks in self._tasks.items()
                for task in tasks.checkpoint
            },
            resumes=dict(self._resumes),
        )

    def lease_ms(self, flow: str) -> int:
        # A standalone driver needs nobody's leave: the cap for every flow (its slots
        # stop within it if it stops answering them).
        return LEASE_CAP_MS

    def lease_held_since(self, flow: str) -> float | None:
        # Nobody else is ever given its partitions: held since it began.
        return self._started

    def publish(self, event: CopyEvent) -> None:
        # No event log without a coordinator: the halt or loss is in the log and on the
        # flow's REST status.
        log.warning(
            "%s %s-%d: %s", event.flow, event.topic, event.partition, event.text or event.kind
        )

    def resume(self, flow: str, key: TopicPartition, request: ResumeRequest) -> str:
        self._resumes[(flow, key[0], key[1])] = request
        self.changed.set()
        return "requested"

    def fatal(self) -> str | None:
        return None

    def close(self) -> None:
        self._discovery.close()
