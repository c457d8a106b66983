"""The tasks the coordinators assign this driver in the event logs (the default mode).

Every target cluster holds the log of the flows into it; a driver serves every target of
its configuration, or those it is pinned to (``--target``, SRM's Driver Target Cluster
key). It follows each served log through a :class:`ControlLink` of its own (assignment,
lease, incarnation; a target that is down costs only its own flows), and its work is the
union of what each log assigns it. It reports halts and losses to the leader of the
flow's log, forwards operators' resumes there, and, for each flow whose heartbeat task
runs here, watches the source (:mod:`srm_driver.source_watch`) and tells that leader when
what the flow matches differs from its task configs (SRM's follower-to-leader notification).

The runtime applies one assignment at a time and reports one generation; the logs have
one each. So the source numbers the combinations it hands out and maps the number the
runtime reports back to each log's generation (:meth:`report_for`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from srm_common.adapters.discovery import Discovery
from srm_common.config.control import ControlPlane, ControlSettings, effective_flow
from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.control.state import ControlState
from srm_common.control.task_ids import parse_task_id
from srm_common.domain.tasks import CheckpointTask, SourceTask
from srm_common.errors import ControlLogError, ControlTopicRefused

from srm_driver.control import ControlLink, LinkPorts
from srm_driver.coordinator_client import CoordinatorUnavailable
from srm_driver.copying.ports import CopyEvent
from srm_driver.copying.state import ResumeRequest
from srm_driver.source_watch import SourceWatch
from srm_driver.tasks import Assignment, Report, TopicPartition

log = logging.getLogger(__name__)

ISSUED_KEPT = 64  # generation combinations remembered (the runtime reports a recent one)


class LeaderClient(Protocol):
    """The driver's client of one log's leader
    (:class:`srm_driver.coordinator_client.CoordinatorClient`)."""

    def start(self) -> None: ...

    def post(
        self, path: str, body: Mapping[str, object], on_behalf_of: str | None = None
    ) -> tuple[int, dict[str, object]]:
        """Send now; the status and answer, or CoordinatorUnavailable."""

    def report(self, path: str, body: dict[str, object]) -> None:
        """Queue a report, sent until the leader took it."""

    def close(self) -> None: ...


# Builds the client of one target's leader, given where that leader is now.
LeaderClients = Callable[[str, Callable[[], str | None]], LeaderClient]


class CoordinatedTaskSource:
    """See the module docstring. ``plane`` holds the logs of the targets served;
    ``link_ports(log)`` builds one link's clients, ``leader_client(target, leader_url)``
    the client of one log's leader (both from the composition root)."""

    def __init__(
        self,
        config: SrmConfig,
        plane: ControlPlane,
        driver_id: str,
        discovery: Discovery,
        *,
        link_ports: Callable[[ControlSettings], LinkPorts],
        leader_client: LeaderClients,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.driver_id = driver_id
        self._config = config
        self._plane = plane
        self._flows: dict[str, FlowConfig] = {
            flow.name: flow for flow in config.flows.values() if flow.target in plane.logs
        }
        self._link_ports = link_ports
        # The sources of the flows whose heartbeat task runs here (notify_leader bound
        # late: a test stands in for it).
        self.source_watch = SourceWatch(
            self._flows, discovery, clock, lambda name, why: self.notify_leader(name, why)
        )
        self.links: dict[str, ControlLink] = {}
        self.clients = {
            target: leader_client(target, self._leader_of(target)) for target in plane.targets
        }
        self.changed = threading.Event()
        # Combination number -> each log's generation in it (see the module docstring).
        self._issued: dict[int, dict[str, int]] = {}
        self._last: tuple[tuple[str, int], ...] | None = None
        self._report: Report | None = None

    def start(self, url: str, report: Report) -> None:
        self._report = report
        for target, settings in self._plane.logs.items():
            ports = self._link_ports(settings)
            try:  # a control topic of the wrong shape is refused with the fix...
                ports.check()
            except ControlTopicRefused:
                raise
            except ControlLogError as exc:  # ...a cluster that does not answer is waited for
                log.warning("cannot check the control topics of %s now: %s", settings.name, exc)
            flows = {name: target for name, flow in self._flows.items() if flow.target == target}
            self.links[target] = ControlLink(
                settings,
                self.driver_id,
                url,
                self._report_of(target),
                ports,
                flow_targets=flows,
                changed=self.changed,
            )
        for link in self.links.values():
            link.start()
        for client in self.clients.values():
            client.start()

    def state_of(self, target: str) -> ControlState:
        link = self.links.get(target)
        return link.state if link else ControlState()

    def _leader_of(self, target: str) -> Callable[[], str | None]:
        def leader_url() -> str | None:
            leader = self.state_of(target).leader
            return leader.url if leader else None

        return leader_url

    def _report_of(self, target: str) -> Report:
        """What the runtime runs, as ``target``'s log sees it: its generation there and
        the tasks of the flows into ``target``."""

        def report() -> tuple[int, frozenset[str]]:
            assert self._report is not None
            number, running = self._report()
            generation = self._issued.get(number, {}).get(target, -1)
            prefix = {name for name, flow in self._flows.items() if flow.target == target}
            return generation, frozenset(t for t in running if t.rpartition("|")[0] in prefix)

        return report

    def assignment(self) -> Assignment | None:
        if not self.links:
            return None
        flows: dict[str, FlowConfig] = {}
        source: dict[str, list[SourceTask]] = {}
        heartbeats: set[str] = set()
        checkpoints: dict[str, CheckpointTask] = {}
        resumes: dict[tuple[str, str, int], ResumeRequest] = {}
        generations: dict[str, int] = {}
        for target, link in self.links.items():
            state = link.state
            generations[target] = state.generation
            mine = {n: f for n, f in self._flows.items() if f.target == target}
            flows.update({n: effective_flow(f, state.flow(n)) for n, f in mine.items()})
            if not link.is_member(state) or link.replaced:
                continue
            for task_id in state.tasks_of(self.driver_id):
                name, kind, _index = parse_task_id(task_id)
                if name not in mine:
                    continue  # not a flow of this driver's configuration into this target
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
            resumes.update(
                {
                    (info.flow, info.topic, info.partition): ResumeRequest(
                        info.request_id, info.point, info.by
                    )
                    for info in state.resumes.values()
                    if info.flow in mine
                }
            )
        for name in heartbeats:
            self.source_watch.check(self.state_of(self._flows[name].target), name)
        return Assignment(
            generation=self._number(generations),
            flows=flows,
            source={
                name: tuple(sorted(tasks, key=lambda t: t.index)) for name, tasks in source.items()
            },
            heartbeats=frozenset(heartbeats),
            checkpoints=checkpoints,
            resumes=resumes,
        )

    def _number(self, generations: dict[str, int]) -> int:
        """The number of this combination of the logs' generations (a new one when it
        changed); the runtime reports it back once it applied the assignment."""
        key = tuple(sorted(generations.items()))
        if key != self._last or not self._issued:
            number = max(self._issued, default=0) + 1
            self._issued[number] = dict(generations)
            for old in sorted(self._issued)[:-ISSUED_KEPT]:
                del self._issued[old]
            self._last = key
        return max(self._issued)

    def lease_ms(self, flow: str) -> int:
        config = self._flows.get(flow)
        link = self.links.get(config.target) if config is not None else None
        return link.lease_ms(flow) if link is not None else 0

    def lease_held_since(self, flow: str) -> float | None:
        config = self._flows.get(flow)
        link = self.links.get(config.target) if config is not None else None
        return link.lease_held_since(flow) if link is not None else None

    def log_status(self) -> dict[str, object] | None:
        """Each served log as this driver reads it (identity, problem, skipped records,
        its generation and whether this driver is a member), by target."""
        if not self.links:
            return None
        return {
            target: {
                **link.log_status(),
                "generation": link.state.generation,
                "member": link.is_member(),
                "lease_ms": link.lease_ms(),
            }
            for target, link in self.links.items()
        }

    def _client(self, flow: str) -> LeaderClient | None:
        config = self._flows.get(flow)
        return self.clients.get(config.target) if config is not None else None

    def publish(self, event: CopyEvent) -> None:
        source, target = event.flow.split("->")
        client = self._client(event.flow)
        if client is None:
            return
        if event.kind == "halted":
            body: dict[str, object] = {
                "topic": event.topic,
                "partition": event.partition,
                "kind": event.detail,
                "reason": event.text,
            }
            client.report(f"/v1/flows/{source}/{target}/partitions/halted", body)
        elif event.kind == "lost":
            body = {
                "topic": event.topic,
                "partition": event.partition,
                "first_offset": event.first,
                "end_offset": event.end,
            }
            client.report(f"/v1/flows/{source}/{target}/partitions/lost", body)

    def resume(self, flow: str, key: TopicPartition, request: ResumeRequest) -> str:
        client = self._client(flow)
        if client is None:
            return f"not applied: this driver does not serve the target of {flow}"
        body = {
            "flow": flow,
            "topic": key[0],
            "partition": key[1],
            "mode": request.point.mode.value,
            "offset": request.point.offset,
            "by": request.by,
            "request_id": request.request_id,
        }
        try:
            # Relayed for the operator who asked this driver: the leader records them.
            status, answer = client.post("/v1/commands/resume", body, request.by)
        except CoordinatorUnavailable as exc:
            return f"not applied: {exc}"
        if status >= 300:
            return f"not applied: {answer.get('error', status)}"
        return "requested (recorded in the event log)"

    def fatal(self) -> str | None:
        return next((link.replaced for link in self.links.values() if link.replaced), None)

    def notify_leader(self, name: str, reason: str) -> bool:
        """Ask the leader of the flow's log to rediscover flow ``name``; False if no
        leader answered."""
        source, target = name.split("->")
        client = self._client(name)
        if client is None:
            return False
        try:
            status, _ = client.post(
                f"/v1/flows/{source}/{target}/refresh", {"driver": self.driver_id, "reason": reason}
            )
        except CoordinatorUnavailable as exc:
            log.warning("%s: cannot notify the leader: %s", name, exc)
            return False
        if status >= 300:
            return False
        log.info("%s: told the leader the source changed (%s)", name, reason)
        return True

    def close(self) -> None:
        self.source_watch.close()
        for client in self.clients.values():
            client.close()
        for link in self.links.values():
            link.close()
