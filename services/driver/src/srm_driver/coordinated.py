"""A driver managed by the coordinator: runs exactly the tasks the event log assigns it.

Source tasks go to the flow's worker (one per flow, created on first use; a new
assignment takes effect between batches, so tasks that stay here never stop), heartbeat
tasks to the heartbeat thread. Checkpoint tasks are held and reported; translating group
offsets is not built yet (docs/status.md). The holder of a flow's heartbeat task also
watches the source and tells the leader when what the flow matches has changed.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping

from srm_common.adapters.discovery import Discovery, DiscoveryError, DiscoveryPending
from srm_common.config.control import ControlSettings, effective_flow
from srm_common.config.model import SrmConfig
from srm_common.control.state import (
    ControlState,
    checkpoint_task_id,
    heartbeat_task_id,
    parse_task_id,
)
from srm_common.domain.tasks import SourceTask

from srm_driver.control import ControlLink
from srm_driver.driver import Driver
from srm_driver.heartbeats import HeartbeatEmitter
from srm_driver.worker import FlowWorker

log = logging.getLogger(__name__)


def new_driver_id() -> str:
    import socket

    return f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"


class CoordinatedDriver(Driver):
    """The driver of a managed deployment; see the module docstring."""

    def __init__(
        self,
        config: SrmConfig,
        settings: ControlSettings,
        *,
        spark_master: str,
        spark_conf: Mapping[str, str] | None = None,
        driver_id: str | None = None,
    ) -> None:
        super().__init__(config, spark_master=spark_master, spark_conf=spark_conf, standalone=False)
        self.settings = settings
        self.driver_id = driver_id or new_driver_id()
        self.flow_workers: dict[str, FlowWorker] = {}
        self.checkpoint_tasks: frozenset[str] = frozenset()
        self.heartbeat_ids: frozenset[str] = frozenset()
        # When this driver took up each heartbeat and checkpoint task it holds (the
        # flow workers keep the same for source tasks).
        self.held_since: dict[str, float] = {}
        self.generation = -1
        self.url = ""
        self.link: ControlLink | None = None
        self._member = False
        self._fenced_logged = False
        # Source listings in the background: an unreachable source cluster must not
        # hold up following the assignment.
        self._discovery = Discovery()
        self._watch_due: dict[str, int] = {}
        self._flows = {flow.name: flow for flow in config.flows.values()}

    # -- what the heartbeat says ------------------------------------------------------

    def report(self) -> tuple[int, frozenset[str]]:
        """The assignment generation applied everywhere in this driver, and what runs."""
        # Called from the beat thread while the main thread may add a worker: one copy
        # (taken after reading self.generation, which _follow sets last).
        generation = self.generation
        workers = list(self.flow_workers.values())
        generations = [generation] + [w.applied_generation for w in workers]
        running = set(self.heartbeat_ids) | set(self.checkpoint_tasks)
        for worker in workers:
            running |= worker.running_tasks
        return min(generations), frozenset(running)

    # -- life cycle -------------------------------------------------------------------

    def start_coordinated(self, url: str) -> None:
        self.url = url
        if any(flow.enabled for flow in self.config.flows.values()):
            # Ready before the first assignment: a topic added with srm-control then
            # starts copying in seconds, not after Spark's start-up.
            self._start_spark()
        self.link = ControlLink(self.settings, self.driver_id, url, self.report)
        self.link.start()
        log.info("driver %s: REST at %s; waiting for an assignment", self.driver_id, url)

    def wait(self) -> None:
        assert self.link is not None
        while not self.stop.is_set():
            self.link.changed.clear()
            try:
                self._follow(self.link.state)
            except Exception as exc:  # noqa: BLE001 - keep following; logged
                log.error("driver %s: %s", self.driver_id, exc)
            self.link.changed.wait(0.2)
        self.shutdown()

    def shutdown(self, timeout: float = 120.0) -> None:
        super().shutdown(timeout)
        self._discovery.close()
        if self.link is not None:
            self.link.close()

    # -- applying the assignment ------------------------------------------------------

    def _follow(self, state: ControlState) -> None:
        assert self.link is not None
        if self.driver_id in state.drivers:
            self._member = True
        elif self._member:
            self._rejoin()
            return
        mine = state.tasks_of(self.driver_id) if self._member else ()
        if self.link.fenced():
            if not self._fenced_logged:
                log.error(
                    "driver %s: no heartbeat acknowledged for most of the session timeout;"
                    " stopping every task until the control cluster answers again",
                    self.driver_id,
                )
                self._fenced_logged = True
            mine = ()
        else:
            self._fenced_logged = False
        sources: dict[str, list[SourceTask]] = {}
        heartbeats: set[str] = set()
        checkpoints: set[str] = set()
        for task_id in mine:
            flow, kind, _index = parse_task_id(task_id)
            if flow not in self._flows:
                continue  # a flow of clusters this driver's config no longer names
            if kind == "source":
                task = state.source_task(task_id)
                if task is not None:
                    sources.setdefault(flow, []).append(task)
            elif kind == "heartbeat":
                heartbeats.add(flow)
            else:
                checkpoints.add(task_id)
        for flow in sorted(set(sources) | set(self.flow_workers)):
            tasks = tuple(sorted(sources.get(flow, ()), key=lambda t: t.index))
            if tasks or flow in self.flow_workers:
                self._worker(flow).set_tasks(state.generation, tasks)
        self._set_heartbeats(heartbeats)
        self.checkpoint_tasks = frozenset(checkpoints)
        now = time.time()
        held = self.heartbeat_ids | self.checkpoint_tasks
        self.held_since = {i: self.held_since.get(i, now) for i in held}
        self.generation = state.generation
        for flow in heartbeats:
            self._watch(state, flow)

    def _worker(self, name: str) -> FlowWorker:
        if name not in self.flow_workers:
            self._start_spark()
            flow = self._flows[name]
            partitions, factor = self._progress_topic[name]
            worker = FlowWorker(
                flow,
                self.session,
                self.stop,
                may_copy=lambda: self.link is not None and not self.link.fenced(),
                progress_partitions=partitions,
                progress_replication_factor=factor,
                managed=True,
            )
            self.flow_workers[name] = worker
            self.workers.append(worker)
            worker.start()
        return self.flow_workers[name]

    def _start_spark(self) -> None:
        if self.session is None:
            from srm_driver.spark import spark_session

            log.info("starting Spark (%s)", self.spark_master)
            self.session = spark_session(self.spark_master, conf=self.spark_conf)

    def _set_heartbeats(self, flows: set[str]) -> None:
        for name in flows - set(self.heartbeat_emitters):
            emitter = HeartbeatEmitter(self._flows[name], self.stop)
            self.heartbeat_emitters[name] = emitter
            emitter.start()
            log.info("%s: started the heartbeat task", name)
        for name in set(self.heartbeat_emitters) - flows:
            emitter = self.heartbeat_emitters.pop(name)
            emitter.halt()
            self.halted_emitters.append(emitter)
            log.info("%s: stopped the heartbeat task", name)
        self.halted_emitters = [e for e in self.halted_emitters if e.is_alive()]
        self.heartbeat_ids = frozenset(heartbeat_task_id(name) for name in flows)

    def _rejoin(self) -> None:
        """The coordinator removed this driver: stop everything, come back as a new one."""
        old = self.driver_id
        for worker in self.flow_workers.values():
            worker.set_tasks(self.generation, ())
        self._set_heartbeats(set())
        self.checkpoint_tasks = frozenset()
        deadline = time.monotonic() + 120
        while any(w.running_tasks for w in self.flow_workers.values()):
            if time.monotonic() > deadline or self.stop.wait(0.1):
                break
        self.driver_id = new_driver_id()
        self._member = False
        assert self.link is not None
        self.link.driver = self.driver_id
        log.warning("driver %s was removed from the group; rejoining as %s", old, self.driver_id)

    # -- telling the leader about source changes --------------------------------------

    def _watch(self, state: ControlState, name: str) -> None:
        """Every refresh interval: if the source matches other partitions or groups than
        the flow's task configs hold, ask the leader to rediscover the flow."""
        flow = effective_flow(self._flows[name], state.flow(name))
        if not flow.enabled or not flow.refresh_topics_enabled:
            return
        now_ms = int(time.time() * 1000)
        due = self._watch_due.get(name, 0)
        if now_ms < due:
            return
        try:
            partitions, groups = self._discovery.discover(flow, due)
        except DiscoveryPending:
            return  # listing in the background; looked at again on the next pass
        except DiscoveryError as exc:
            log.warning("%s: %s", name, exc)
            partitions = groups = None
        self._watch_due[name] = now_ms + flow.refresh_topics_interval_seconds * 1000
        tasks = state.tasks.get(name)
        if partitions is None or tasks is None:
            return
        planned = {tp for task in tasks.source for tp in task.partitions}
        planned_groups = {g for task in tasks.checkpoint for g in task.groups}
        differences = []
        if set(partitions) != planned:
            differences.append(f"{len(partitions)} partitions match, {len(planned)} planned")
        if set(groups) != planned_groups:
            differences.append(f"{len(groups)} groups match, {len(planned_groups)} planned")
        if differences:
            self.notify_leader(state, name, "; ".join(differences))

    def notify_leader(self, state: ControlState, name: str, reason: str) -> bool:
        """POST the leader's refresh endpoint for flow ``name``; False if it did not answer."""
        if state.leader is None:
            return False
        source, target = name.split("->")
        request = urllib.request.Request(
            f"{state.leader.url}/v1/flows/{source}/{target}/refresh",
            data=json.dumps({"driver": self.driver_id, "reason": reason}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=5):
                pass
        except (urllib.error.URLError, OSError) as exc:
            log.warning("%s: cannot notify the leader at %s: %s", name, state.leader.url, exc)
            return False
        log.info("%s: told the leader the source changed (%s)", name, reason)
        return True


def flow_status(driver: CoordinatedDriver, name: str) -> dict[str, object]:
    """The per-flow REST answer: this driver's tasks of ``name`` and how they run."""
    state = driver.link.state if driver.link else ControlState()
    mine = [t for t in state.tasks_of(driver.driver_id) if t.startswith(f"{name}|")]
    worker = driver.flow_workers.get(name)
    status = worker.status if worker else None
    tasks = []
    for task_id in mine:
        _flow, kind, _index = parse_task_id(task_id)
        entry: dict[str, object] = {"id": task_id, "kind": kind}
        if kind == "source":
            running = worker is not None and task_id in worker.running_tasks
            entry["state"] = "RUNNING" if running else "STARTING"
            since = worker.task_since.get(task_id) if worker else None
        elif kind == "heartbeat":
            entry["state"] = "RUNNING"
            since = driver.held_since.get(task_id)
        else:
            entry["state"] = "ASSIGNED"
            entry["note"] = "group offset translation is not built yet"
            since = driver.held_since.get(task_id)
        # Since when this driver has held the task without interruption.
        entry["since_ms"] = int(since * 1000) if since else None
        tasks.append(entry)
    return {
        "flow": name,
        "driver": driver.driver_id,
        "generation": driver.generation,
        "tasks": tasks,
        "copy": None
        if status is None
        else {
            "batches": status.batches,
            "records": status.records,
            "partitions": status.partitions,
            "halted": len(status.halted),
            "last_error": status.last_error,
        },
    }


def flow_task_configs(driver: CoordinatedDriver, name: str) -> list[dict[str, object]]:
    """MM2-style task configs of flow ``name`` (all tasks, from the event log)."""
    state = driver.link.state if driver.link else ControlState()
    tasks = state.tasks.get(name)
    if tasks is None:
        return []
    configs: list[dict[str, object]] = []
    for task in tasks.source:
        configs.append(
            {
                "id": task.name,
                "owner": state.task_owner(task.name),
                "config": {
                    "task.class": "MirrorSourceTask",
                    "task.assigned.partitions": task.assigned_partitions(),
                },
            }
        )
    for task in tasks.checkpoint:
        task_id = checkpoint_task_id(name, task.index)
        configs.append(
            {
                "id": task_id,
                "owner": state.task_owner(task_id),
                "config": {
                    "task.class": "MirrorCheckpointTask",
                    "task.assigned.groups": ",".join(task.groups),
                },
            }
        )
    if tasks.heartbeat:
        task_id = heartbeat_task_id(name)
        configs.append(
            {
                "id": task_id,
                "owner": state.task_owner(task_id),
                "config": {"task.class": "MirrorHeartbeatTask"},
            }
        )
    return configs
