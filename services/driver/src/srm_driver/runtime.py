"""The driver: runs what its task source gives it, until stopped.

One runtime whatever the source (:mod:`srm_driver.tasks`): each pass it takes the
current assignment and

* gives each flow's worker (:class:`FlowWorker`, two threads per flow) the upstream
  partitions of its source tasks; the worker keeps their remote topics in step and hands
  those whose remote topic is ready to the copy service, which it lets reconcile and plan
  them (so a slow cluster holds up only its own flows, never this loop);
* runs a heartbeat emitter per flow whose heartbeat task is here;
* runs a checkpoint runner per checkpoint task here (group offsets translated to the
  target, and group offset sync: :mod:`srm_driver.checkpoints`);
* runs a flow's ACL sync job where its first source task is (:mod:`srm_driver.acl_sync`);
* hands operators' resumes of halted partitions to the copy service;
* samples each flow's raw metrics when its ``srm.metrics.interval.ms`` ended
  (:mod:`srm_driver.raw_metrics`; written on threads of their own, never waited for);

and reports what it runs (for the coordinator's cooperative assignment, a source task
runs until every partition of it is released).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from srm_common.config.model import FlowConfig
from srm_common.control.task_ids import heartbeat_task_id
from srm_common.domain.tasks import CheckpointTask, SourceTask

from srm_driver.acl_sync import AclSyncJob, runs_acl_sync
from srm_driver.checkpoints import CheckpointRunner
from srm_driver.copying.service import CopyService
from srm_driver.flow_topics import FlowTopics
from srm_driver.flow_worker import FlowWorker
from srm_driver.heartbeats import HeartbeatEmitter
from srm_driver.raw_metrics import FlowView, RawMetrics
from srm_driver.task_thread import TaskThread
from srm_driver.tasks import Assignment, TaskSource

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
PASS_SECONDS = 0.2
STATUS_SECONDS = 10.0
_NO_TASKS: Mapping[TopicPartition, str] = {}


class DriverRuntime:
    """See the module docstring."""

    def __init__(
        self,
        *,
        source: TaskSource,
        copy: CopyService,
        flow_topics: Callable[[FlowConfig], FlowTopics],
        heartbeat: Callable[[FlowConfig, threading.Event], HeartbeatEmitter],
        checkpoints: Callable[[str, FlowConfig, CheckpointTask, threading.Event], CheckpointRunner],
        metrics: RawMetrics | None = None,
        acl_sync: Callable[[FlowConfig, threading.Event], AclSyncJob] | None = None,
    ) -> None:
        self.source = source
        self.copy = copy
        self.stop = threading.Event()
        self._flow_topics = flow_topics
        self._heartbeat = heartbeat
        self._workers: dict[str, FlowWorker] = {}
        # Per flow: the source tasks last applied, the partitions they own, and which
        # task each owned (or still held) partition belongs to.
        self._applied: dict[str, tuple[object, frozenset[TopicPartition]]] = {}
        self._emitters: dict[str, HeartbeatEmitter] = {}
        self._halted: list[TaskThread] = []  # taken away, maybe still in a slow call
        self._task_of: dict[str, dict[TopicPartition, str]] = {}
        # Per flow: the tasks with a partition held here, and the held set and task map
        # they were worked out from (see report()).
        self._running_of: dict[
            str, tuple[frozenset[TopicPartition], Mapping[TopicPartition, str], frozenset[str]]
        ] = {}
        self._checkpoint = checkpoints
        self.checkpoint_runners: dict[str, tuple[CheckpointTask, CheckpointRunner]] = {}
        self.held_since: dict[str, float] = {}
        self.generation = -1
        self.assignment: Assignment | None = None
        self.flows: Mapping[str, FlowConfig] = {}
        self._last_status = time.monotonic()
        self.metrics = metrics
        self._acl_sync = acl_sync
        self.acl_syncs: dict[str, AclSyncJob] = {}

    # -- what the heartbeat says ------------------------------------------------------

    def report(self) -> tuple[int, frozenset[str]]:
        """The assignment generation applied, and the task ids running here."""
        generation = self.generation
        running = {heartbeat_task_id(name) for name in self._emitters}
        running |= set(self.checkpoint_runners)
        task_of = dict(self._task_of)
        for name in self.flows:
            tasks = task_of.get(name, _NO_TASKS)
            held = self.copy.held(name)
            known = self._running_of.get(name)
            if known is None or known[0] is not held or known[1] is not tasks:
                # Worked out again only when the partitions held or their tasks changed
                # (both are replaced, never changed in place): not at every beat.
                found = frozenset(task for key in held if (task := tasks.get(key)) is not None)
                known = self._running_of[name] = (held, tasks, found)
            running |= known[2]
        return generation, frozenset(running)

    # -- the loop -----------------------------------------------------------------------

    def run(self) -> None:
        """Follow the task source until ``stop`` is set (or the source says this driver
        must stop), then release everything."""
        while not self.stop.is_set():
            fatal = self.source.fatal() or self.copy.fatal()
            if fatal is not None:
                log.error("%s", fatal)
                break
            self.source.changed.clear()
            try:
                assignment = self.source.assignment()
                if assignment is not None:
                    self._apply(assignment)
                self.copy.tick()
            except Exception as exc:  # noqa: BLE001 - one bad pass must not end the driver
                log.exception("driver pass failed: %s", exc)
            if self.metrics is not None:
                try:
                    self.metrics.tick(self.flows, self.metric_view)
                except Exception as exc:  # noqa: BLE001 - metrics never stop the driver
                    log.exception("raw metrics: sampling failed: %s", exc)
            self._maybe_log_status()
            self.source.changed.wait(PASS_SECONDS)
        self.shutdown()

    def _apply(self, assignment: Assignment) -> None:
        self.flows = assignment.flows
        for name in sorted(set(assignment.source) | set(self._workers)):
            tasks = assignment.source.get(name, ())
            worker = self._workers.get(name)
            if worker is None:
                if not tasks:
                    continue
                topics = self._flow_topics(assignment.flows[name])
                worker = self._workers[name] = FlowWorker(name, topics, self.copy, self.stop)
                worker.start()
            worker.want(self._owned(name, tasks))
        self._set_heartbeats(assignment)
        self._set_checkpoints(assignment)
        self._set_acl_syncs(assignment)
        now = time.time()
        ids = {heartbeat_task_id(n) for n in assignment.heartbeats} | set(assignment.checkpoints)
        ids |= {task.name for tasks in assignment.source.values() for task in tasks}
        self.held_since = {i: self.held_since.get(i, now) for i in ids}
        for (flow, topic, partition), request in assignment.resumes.items():
            self.copy.request_resume(flow, (topic, partition), request)
        self.assignment = assignment
        self.generation = assignment.generation

    def _owned(self, name: str, tasks: tuple[SourceTask, ...]) -> frozenset[TopicPartition]:
        """The partitions ``tasks`` own: the same object while the tasks are the same
        (worked out again only when they changed, not at every pass)."""
        applied = self._applied.get(name)
        if applied is not None and applied[0] == tasks:
            return applied[1]
        owner = {tp: task.name for task in tasks for tp in task.partitions}
        owned = frozenset(owner)
        # A released partition still copying stays under its old task until it stops.
        before = self._task_of.get(name, {})
        held = self.copy.held(name)
        self._task_of[name] = {
            **{tp: task for tp, task in before.items() if tp in held},
            **owner,
        }
        self._applied[name] = (tasks, owned)
        return owned

    def _set_heartbeats(self, assignment: Assignment) -> None:
        wanted = assignment.heartbeats
        for name in wanted - set(self._emitters):
            emitter = self._heartbeat(assignment.flows[name], self.stop)
            self._emitters[name] = emitter
            emitter.start()
            log.info("%s: started the heartbeat task", name)
        for name in set(self._emitters) - wanted:
            emitter = self._emitters.pop(name)
            emitter.halt()
            self._halted.append(emitter)
            log.info("%s: stopped the heartbeat task", name)
        self._halted = [t for t in self._halted if t.is_alive()]

    def _set_checkpoints(self, assignment: Assignment) -> None:
        """A runner per checkpoint task held; a task whose groups changed restarts."""
        for task_id, (task, runner) in list(self.checkpoint_runners.items()):
            wanted = assignment.checkpoints.get(task_id)
            flow = assignment.flows.get(task.flow)
            if wanted == task and flow is not None and flow == runner.task.flow:
                continue
            runner.halt()
            self._halted.append(runner)
            del self.checkpoint_runners[task_id]
            log.info("%s: stopped the checkpoint task", task_id)
        for task_id, task in assignment.checkpoints.items():
            if task_id in self.checkpoint_runners or task.flow not in assignment.flows:
                continue
            runner = self._checkpoint(task_id, assignment.flows[task.flow], task, self.stop)
            self.checkpoint_runners[task_id] = (task, runner)
            runner.start()
            log.info("%s: started the checkpoint task for %d groups", task_id, len(task.groups))

    def _set_acl_syncs(self, assignment: Assignment) -> None:
        """An ACL sync job per flow whose first source task is here (one driver per flow);
        a flow whose configuration changed gets a new job."""
        if self._acl_sync is None:
            return
        wanted = {
            name: assignment.flows[name]
            for name, tasks in assignment.source.items()
            if any(task.index == 0 for task in tasks) and runs_acl_sync(assignment.flows[name])
        }
        for name, job in list(self.acl_syncs.items()):
            if wanted.get(name) != job.flow:
                job.halt()
                self._halted.append(job)
                del self.acl_syncs[name]
                log.info("%s: stopped the ACL sync job", name)
        for name, flow in wanted.items():
            if name not in self.acl_syncs:
                job = self.acl_syncs[name] = self._acl_sync(flow, self.stop)
                job.start()
                log.info(
                    "%s: started the ACL sync job (every %d s)",
                    name,
                    flow.sync_topic_acls_interval_seconds,
                )

    def metric_view(self, name: str) -> FlowView:
        """What ``name``'s tasks here show for a raw metrics sample (drains the checkpoint
        tasks' windows: asked once per sample)."""
        assignment = self.assignment
        tasks = assignment.source.get(name, ()) if assignment is not None else ()
        emitter = self._emitters.get(name)
        runners = [r for task, r in self.checkpoint_runners.values() if task.flow == name]
        return FlowView(
            source_tasks={task.name: tuple(task.partitions) for task in tasks},
            heartbeat=emitter is not None,
            heartbeat_ms=getattr(emitter.task, "last_beat_ms", None) if emitter else None,
            heartbeat_failing=bool(getattr(emitter.task, "failing", False)) if emitter else False,
            checkpoint_tasks=len(runners),
            groups=tuple(g for runner in runners for g in runner.task.take_metrics()),
        )

    def _maybe_log_status(self) -> None:
        now = time.monotonic()
        if now - self._last_status < STATUS_SECONDS:
            return
        self._last_status = now
        for name in sorted(self._workers):
            status = self.copy.status(name)
            if status["partitions"]:
                log.info("%s", status_line(name, status))

    def shutdown(self, timeout: float = 90.0) -> None:
        """Let the copy slots finish and record what they sent, stop the heartbeats."""
        self.stop.set()
        for worker in self._workers.values():
            worker.wake()
        workers_done = time.monotonic() + 5.0  # one in a slow call is left behind
        for worker in self._workers.values():
            worker.join(max(0.0, workers_done - time.monotonic()))
        self.copy.stop(timeout)
        # One deadline for all (at most 10 s): some may hang on a write.
        deadline = time.monotonic() + min(10.0, timeout)
        runners = [runner for _task, runner in self.checkpoint_runners.values()]
        for thread in [*self._emitters.values(), *runners, *self.acl_syncs.values(), *self._halted]:
            thread.join(max(0.0, deadline - time.monotonic()))
        # The goodbye beat lists what still runs: a thread stuck in a write stays listed
        # (its task is waited out), one that ended is not.
        self._emitters = {n: e for n, e in self._emitters.items() if e.is_alive()}
        if self.metrics is not None:
            # After the slots' final reports: every acknowledged copy is in a sample.
            try:
                self.metrics.close(self.flows, self.metric_view)
            except Exception as exc:  # noqa: BLE001 - metrics never stop the driver
                log.exception("raw metrics: the last samples failed: %s", exc)
        self.checkpoint_runners = {
            i: (t, r) for i, (t, r) in self.checkpoint_runners.items() if r.is_alive()
        }
        self.source.close()
        log.info("driver stopped")


def status_line(flow: str, status: Mapping[str, Any]) -> str:
    """The driver's periodic line about a flow, as short at 10,000 partitions as at 8:
    counts by state, copies, latency and the partition furthest behind."""
    by_status = ", ".join(f"{state} {n:,}" for state, n in sorted(status["by_status"].items()))
    line = (
        f"{flow}: {status['partitions']:,} partitions ({by_status}); {status['records']:,}"
        f" records copied, latency avg {status['latency_avg_ms']} ms max"
        f" {status['latency_max_ms']} ms"
    )
    worst = status.get("largest_lag")
    if worst:
        line += f"; furthest behind {worst['topic']}-{worst['partition']} ({worst['records']:,})"
    return line
