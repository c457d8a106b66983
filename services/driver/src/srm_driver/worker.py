"""A flow worker: the source tasks of one enabled flow ``S->T`` in a thread.

Keeps the remote topics in step with the source (created before the first copy, grown,
configs synced), plans source tasks with the core's planner and copies batches until
told to stop. A stop lets the running batch finish and be recorded first.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from srm_common.config.model import FlowConfig
from srm_common.domain.tasks import SourceTask, plan_source_tasks

from srm_driver.copier import BatchReport, FlowCopier
from srm_driver.kafka_admin import admin_client, topic_partitions
from srm_driver.topic_sync import TopicSync, TopicSyncError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

RETRY_SECONDS = 2.0
STATUS_SECONDS = 10.0


@dataclass
class FlowStatus:
    """What a worker has done, for status lines and (later) the per-flow REST endpoint."""

    flow: str
    topics: int = 0
    partitions: int = 0
    tasks: tuple[SourceTask, ...] = ()
    records: int = 0
    value_bytes: int = 0
    batches: int = 0
    lost: int = 0
    halted: dict[tuple[str, int], str] = field(default_factory=dict)
    last_error: str | None = None


def describe_failure(exc: BaseException) -> str:
    """One line for the log: the root cause of a Py4J/Java error, else the message."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            while java.getCause() is not None and java.getCause() != java:
                java = java.getCause()
            return str(java.toString())
        except Exception:  # noqa: BLE001 - the JVM may be gone
            pass
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class FlowWorker(threading.Thread):
    """Runs the source tasks of one flow until ``stop`` is set."""

    def __init__(
        self,
        flow: FlowConfig,
        session: SparkSession,
        stop: threading.Event,
        *,
        progress_partitions: int = 25,
        progress_replication_factor: int = -1,
        managed: bool = False,
        may_copy: Callable[[], bool] = lambda: True,
    ) -> None:
        super().__init__(name=f"flow {flow.name}", daemon=True)
        self.flow = flow
        # Managed: the coordinator's assignment says which source tasks run here
        # (set_tasks); standalone: the worker plans every task of the flow itself.
        self.managed = managed
        # Checked before every batch: a driver that lost its lease starts none.
        self.may_copy = may_copy
        self._desired: tuple[int, tuple[SourceTask, ...]] = (0, ())
        self._applied: tuple[int, tuple[SourceTask, ...]] | None = None
        self._lock = threading.Lock()
        self.applied_generation = -1
        self.running_tasks: frozenset[str] = frozenset()
        self.task_since: dict[str, float] = {}
        self.stop = stop
        self.status = FlowStatus(flow.name)
        self._source_admin = admin_client(flow.source_admin)
        self._target_admin = admin_client(flow.target_admin)
        self.topics = TopicSync(flow, self._source_admin, self._target_admin)
        self.copier = FlowCopier(
            flow,
            session,
            max_records=flow.batch_max_records,
            progress_partitions=progress_partitions,
            progress_replication_factor=progress_replication_factor,
        )
        self._replicated: dict[str, int] = {}
        self._next_refresh = 0.0
        self._next_config_sync = 0.0
        self._window = BatchReport()
        self._window_started = time.monotonic()

    def set_tasks(self, generation: int, tasks: tuple[SourceTask, ...]) -> None:
        """Run exactly ``tasks`` from the next batch on (assignment ``generation``)."""
        with self._lock:
            self._desired = (generation, tasks)

    def _apply_tasks(self) -> None:
        """Between batches: take up the tasks the coordinator assigned here now."""
        with self._lock:
            desired = self._desired
        if desired == self._applied:
            return
        generation, tasks = desired
        owned = {tp for task in tasks for tp in task.partitions}
        counts = topic_partitions(self._source_admin) if owned else {}
        wanted = {topic: counts[topic] for topic, _ in owned if topic in counts}
        try:
            for change in self.topics.ensure_remote_topics(wanted):
                log.info("%s: %s", self.flow.name, change)
        except TopicSyncError as exc:
            log.error("%s: %s (retrying)", self.flow.name, exc)
            ready = topic_partitions(self._target_admin)
            wanted = {
                t: n for t, n in wanted.items() if ready.get(self.topics.remote_topic(t), 0) >= n
            }
        self._replicated = wanted
        self.copier.assign({tp: self.topics.remote_topic(tp[0]) for tp in owned if tp[0] in wanted})
        now = time.time()
        ids = {task.name for task in tasks}
        self.task_since = {i: self.task_since.get(i, now) for i in ids}
        for gone in sorted(self.running_tasks - ids):
            log.info(
                "%s: stopped task %s (assignment generation %d)", self.flow.name, gone, generation
            )
        for new in sorted(ids - self.running_tasks):
            log.info(
                "%s: started task %s (assignment generation %d)", self.flow.name, new, generation
            )
        self.running_tasks = frozenset(ids)
        self.status.tasks = tasks
        self.status.topics = len(wanted)
        self.status.partitions = len(self.copier.partitions)
        self._applied = desired
        self.applied_generation = generation

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                if self.managed:
                    # Nothing runs before prepare succeeds: the assignment is applied
                    # (owning no partitions yet) so that the coordinator is not held up.
                    with self._lock:
                        self.applied_generation = self._desired[0]
                        self.running_tasks = frozenset()
                self.copier.prepare()
                break
            except Exception as exc:  # noqa: BLE001 - e.g. a new topic without a leader yet
                self._failed("cannot start, retrying", exc)
        while not self.stop.is_set():
            try:
                if self.managed:
                    self._apply_tasks()
                self._maintain_topics()
                report = self.copier.run_batch() if self.may_copy() else None
            except Exception as exc:  # noqa: BLE001 - a batch failure is logged and retried
                self._failed("batch failed, retrying after reconciling", exc)
                continue
            if report is None:
                self.stop.wait(self.flow.idle_wait_ms / 1000)
            else:
                self._count(report)
            self._maybe_log_status()
        self.copier.close()
        log.info("%s: stopped after %d batches", self.flow.name, self.status.batches)

    def _failed(self, what: str, exc: Exception) -> None:
        message = describe_failure(exc)
        self.status.last_error = message
        log.error("%s: %s: %s", self.flow.name, what, message)
        self.stop.wait(RETRY_SECONDS)

    def _maintain_topics(self) -> None:
        now = time.monotonic()
        if now >= self._next_refresh:
            interval = self.flow.refresh_topics_interval_seconds
            self._next_refresh = now + (interval if self.flow.refresh_topics_enabled else 1e12)
            self._refresh_topics()
        if self.flow.sync_topic_configs_enabled and now >= self._next_config_sync:
            first = not self._next_config_sync  # creation copied the configs
            self._next_config_sync = now + self.flow.sync_topic_configs_interval_seconds
            if not first:
                try:
                    changes = self.topics.sync_configs(self._replicated)
                except TopicSyncError as exc:
                    changes = exc.changes
                    log.error("%s: %s (retrying next sync)", self.flow.name, exc)
                for change in changes:
                    log.info("%s: %s", self.flow.name, change)

    def _refresh_topics(self) -> None:
        if self.managed:
            # The coordinator decides what is copied; grow remote topics of ours.
            self._applied = None
            return
        replicated = self.topics.replicated_topics()
        try:
            changes = self.topics.ensure_remote_topics(replicated)
        except TopicSyncError as exc:
            # Copy what has a remote twin; the others are tried again next refresh.
            changes = exc.changes
            log.error(
                "%s: %s (retrying in %d s)",
                self.flow.name,
                exc,
                self.flow.refresh_topics_interval_seconds,
            )
            ready = topic_partitions(self._target_admin)
            replicated = {
                topic: count
                for topic, count in replicated.items()
                if ready.get(self.topics.remote_topic(topic), 0) >= count
            }
        for change in changes:
            log.info("%s: %s", self.flow.name, change)
        for gone in sorted(set(self._replicated) - set(replicated)):
            log.info("%s: %s is no longer replicated", self.flow.name, gone)
        for new in sorted(set(replicated) - set(self._replicated)):
            log.info("%s: replicating %s -> %s", self.flow.name, new, self.topics.remote_topic(new))
        self._replicated = replicated
        partitions = [(topic, p) for topic, count in replicated.items() for p in range(count)]
        # A single driver runs every task of the flow; the coordinator will hand out
        # subsets of the same plan.
        tasks = plan_source_tasks(self.flow.name, partitions, self.flow.tasks_max)
        owned = {tp for task in tasks for tp in task.partitions}
        self.copier.assign({tp: self.topics.remote_topic(tp[0]) for tp in owned})
        self.status.tasks = tasks
        self.status.topics = len(replicated)
        self.status.partitions = len(owned)

    def _count(self, report: BatchReport) -> None:
        self.status.batches += 1
        self.status.records += report.written
        self.status.value_bytes += report.value_bytes
        self.status.lost += report.lost
        self.status.halted.update(report.halted)
        self.status.last_error = None
        window = self._window
        window.written += report.written
        window.value_bytes += report.value_bytes
        window.latency_sum_ms += report.latency_sum_ms
        window.latency_max_ms = max(window.latency_max_ms, report.latency_max_ms)
        window.partitions += 1

    def _maybe_log_status(self) -> None:
        elapsed = time.monotonic() - self._window_started
        if elapsed < STATUS_SECONDS:
            return
        window = self._window
        if window.written:
            log.info(
                "%s: copied %d records (%.1f MB) in %.0f s, %.0f records/s; record age at"
                " copy (now - record timestamp) avg %d ms, max %d ms; %d topics, %d"
                " partitions, %d tasks",
                self.flow.name,
                window.written,
                window.value_bytes / 1e6,
                elapsed,
                window.written / elapsed,
                window.latency_sum_ms // max(window.written, 1),
                window.latency_max_ms,
                self.status.topics,
                self.status.partitions,
                len(self.status.tasks),
            )
        if self.status.halted:
            log.warning(
                "%s: %d partitions halted (see earlier errors)",
                self.flow.name,
                len(self.status.halted),
            )
        self._window = BatchReport()
        self._window_started = time.monotonic()
