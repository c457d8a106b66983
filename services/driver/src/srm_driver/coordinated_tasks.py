"""The tasks the coordinator assigns this driver in the event log (the default mode).

Follows the log through :class:`ControlLink` (assignment, lease, incarnation), reports
halts and losses to the leader, forwards operators' resumes, and, for each flow whose
heartbeat task runs here, watches the source and tells the leader when what the flow
matches differs from its task configs (SRM's follower-to-leader notification).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from srm_common.adapters.discovery import Discovery, DiscoveryError, DiscoveryPending
from srm_common.adapters.http_client import HttpCredentials
from srm_common.adapters.kafka_log import (
    ControlLogError,
    ControlTopicRefused,
    check_control_topics,
)
from srm_common.config.control import ControlSettings, effective_flow
from srm_common.config.model import SrmConfig
from srm_common.control.refresh import Due, RefreshSchedule
from srm_common.control.state import ControlState, parse_task_id
from srm_common.domain.tasks import CheckpointTask, SourceTask

from srm_driver.control import ControlLink, LinkPorts
from srm_driver.coordinator_client import CoordinatorClient, CoordinatorUnavailable
from srm_driver.copying.ports import CopyEvent
from srm_driver.copying.state import ResumeRequest
from srm_driver.tasks import Assignment, Report, TopicPartition

log = logging.getLogger(__name__)


class CoordinatedTaskSource:
    """See the module docstring."""

    def __init__(
        self,
        config: SrmConfig,
        settings: ControlSettings,
        driver_id: str,
        discovery: Discovery,
        link_ports: Callable[[], LinkPorts],
        clock: Callable[[], float] = time.monotonic,
        credentials: HttpCredentials | None = None,
    ) -> None:
        self.driver_id = driver_id
        self._clock = clock
        self._config = config
        self._settings = settings
        self._flows = {flow.name: flow for flow in config.flows.values()}
        self._discovery = discovery
        self._link_ports = link_ports
        self._watch_due: dict[str, RefreshSchedule] = {}
        self.link: ControlLink | None = None
        self.client = CoordinatorClient(self._leader_url, driver_id, credentials)
        self.changed = threading.Event()

    def start(self, url: str, report: Report) -> None:
        try:  # a control topic of the wrong shape is refused with the fix...
            check_control_topics(self._settings, timeout=10)
        except ControlTopicRefused:
            raise
        except ControlLogError as exc:  # ...an unreachable control cluster is waited for
            log.warning("cannot check the control topics now: %s", exc)
        targets = {name: flow.target for name, flow in self._flows.items()}
        self.link = ControlLink(
            self._settings, self.driver_id, url, report, self._link_ports(), flow_targets=targets
        )
        self.changed = self.link.changed
        self.link.start()
        self.client.start()

    @property
    def state(self) -> ControlState:
        return self.link.state if self.link else ControlState()

    def _leader_url(self) -> str | None:
        leader = self.state.leader
        return leader.url if leader else None

    def assignment(self) -> Assignment | None:
        link = self.link
        if link is None:
            return None
        state = link.state
        flows = {name: effective_flow(flow, state.flow(name)) for name, flow in self._flows.items()}
        if not link.is_member(state) or link.replaced:
            return Assignment(generation=state.generation, flows=flows)
        source: dict[str, list[SourceTask]] = {}
        heartbeats: set[str] = set()
        checkpoints: dict[str, CheckpointTask] = {}
        for task_id in state.tasks_of(self.driver_id):
            name, kind, _index = parse_task_id(task_id)
            if name not in flows:
                continue  # a flow of clusters this driver's configuration does not name
            if kind == "source":
                task = state.source_task(task_id)
                if task is not None:
                    source.setdefault(name, []).append(task)
            elif kind == "heartbeat":
                heartbeats.add(name)
            else:
                checkpoint = state.checkpoint_task(task_id)
                if checkpoint is not None:
                    checkpoints[task_id] = checkpoint
        for name in heartbeats:
            self._watch(state, name)
        resumes = {
            (info.flow, info.topic, info.partition): ResumeRequest(
                info.request_id, info.mode, info.offset, info.by
            )
            for info in state.resumes.values()
        }
        return Assignment(
            generation=state.generation,
            flows=flows,
            source={
                name: tuple(sorted(tasks, key=lambda t: t.index)) for name, tasks in source.items()
            },
            heartbeats=frozenset(heartbeats),
            checkpoints=checkpoints,
            resumes=resumes,
        )

    def lease_ms(self, flow: str) -> int:
        return self.link.lease_ms(flow) if self.link else 0

    def log_status(self) -> dict[str, object] | None:
        """The event log as this driver reads it (identity, problem, skipped records),
        and the fences on each cluster its flows write into."""
        if self.link is None:
            return None
        return {**self.link.log_status(), "fences": self.link.fence_status()}

    def publish(self, event: CopyEvent) -> None:
        source, target = event.flow.split("->")
        if event.kind == "halted":
            body: dict[str, object] = {
                "topic": event.topic,
                "partition": event.partition,
                "kind": event.detail,
                "reason": event.text,
            }
            self.client.report(f"/v1/flows/{source}/{target}/partitions/halted", body)
        elif event.kind == "lost":
            body = {
                "topic": event.topic,
                "partition": event.partition,
                "first_offset": event.first,
                "end_offset": event.end,
            }
            self.client.report(f"/v1/flows/{source}/{target}/partitions/lost", body)

    def resume(self, flow: str, key: TopicPartition, request: ResumeRequest) -> str:
        body = {
            "flow": flow,
            "topic": key[0],
            "partition": key[1],
            "mode": request.mode,
            "offset": request.offset,
            "by": request.by,
            "request_id": request.request_id,
        }
        try:
            # Relayed for the operator who asked this driver: the leader records them.
            status, answer = self.client.post("/v1/commands/resume", body, request.by)
        except CoordinatorUnavailable as exc:
            return f"not applied: {exc}"
        if status >= 300:
            return f"not applied: {answer.get('error', status)}"
        return "requested (recorded in the event log)"

    def fatal(self) -> str | None:
        return self.link.replaced if self.link else None

    def notify_leader(self, name: str, reason: str) -> bool:
        """Ask the leader to rediscover flow ``name``; False if no leader answered."""
        source, target = name.split("->")
        try:
            status, _ = self.client.post(
                f"/v1/flows/{source}/{target}/refresh", {"driver": self.driver_id, "reason": reason}
            )
        except CoordinatorUnavailable as exc:
            log.warning("%s: cannot notify the leader: %s", name, exc)
            return False
        if status >= 300:
            return False
        log.info("%s: told the leader the source changed (%s)", name, reason)
        return True

    def _watch(self, state: ControlState, name: str) -> None:
        """Topics every ``refresh.topics.interval.seconds``, groups every
        ``refresh.groups.interval.seconds`` (each while its switch is on): if the source
        matches other partitions or groups than the flow's task configs hold, ask the
        leader to rediscover the flow."""
        flow = effective_flow(self._flows[name], state.flow(name))
        if not flow.enabled:
            return
        now_ms = int(self._clock() * 1000)
        schedule = self._watch_due.setdefault(name, RefreshSchedule())
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
            self.notify_leader(name, "; ".join(differences))

    def close(self) -> None:
        self._discovery.close()
        self.client.close()
        if self.link is not None:
            self.link.close()
