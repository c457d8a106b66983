"""Checkpoint tasks: consumer group offsets translated to the target, and group sync.

A checkpoint task holds some of a flow's consumer groups (the coordinator deals them, as
MM2 does). Every ``emit.checkpoints.interval.seconds`` it reads each group's committed
offsets on the source, keeps the partitions the flow replicates, translates them exactly
(:class:`srm_common.adapters.flow_offsets.FlowOffsets`) and writes MM2-format checkpoints
to ``<source>.checkpoints.internal`` on the target: only what changed (new, the group
rewound, or the translation advanced). A partition that cannot be translated exactly is
left out, and its reason is on the flow's REST status.

With ``sync.group.offsets.enabled``, every ``sync.group.offsets.interval.seconds`` the
task also commits the translated offsets for the same group on the target, only while
that group has no active members there, never moving it backwards and never adding
partitions the group did not consume on the source; each group skipped says why.

Each task runs on a thread of its own, so a source or target cluster that does not
answer delays its own groups and nothing else; failures are retried next interval.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from srm_common.adapters.flow_offsets import FlowOffsets
from srm_common.adapters.group_admin import ClusterGroups
from srm_common.config.model import FlowConfig
from srm_common.domain.records import Checkpoint
from srm_common.replication_plan import reason_not_replicated

from srm_driver.internal_writer import InternalWriter
from srm_driver.raw_metrics import GroupMetrics
from srm_driver.task_thread import TaskThread

log = logging.getLogger(__name__)

Key = tuple[str, int]
RETRY_SECONDS = 5.0
# Sync points kept per partition that no group of the task reads (each is two ints);
# below the lowest commit of the task's groups nothing is kept (a rewind past it is
# declined, as MM2's store does).
MAX_SYNCS_KEPT = 50_000


@dataclass
class GroupStatus:
    """What the REST status says of one group."""

    translated: int = 0
    untranslated: dict[str, str] = field(default_factory=dict)  # "topic-p" -> why
    checkpoint_latency_ms: int | None = None
    checkpoint_latency_max_ms: int = 0
    checkpoints_written: int = 0
    sync: str | None = None  # the last group offset sync: what was done, or why not
    error: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "translated_partitions": self.translated,
            "untranslated": dict(sorted(self.untranslated.items())),
            "checkpoint_latency_ms": self.checkpoint_latency_ms,
            "checkpoint_latency_max_ms": self.checkpoint_latency_max_ms,
            "checkpoints_written": self.checkpoints_written,
            "group_offset_sync": self.sync,
            "error": self.error,
        }


class Checkpointer:
    """One task's groups; :meth:`emit` and :meth:`sync_groups` are one round each."""

    def __init__(
        self,
        flow: FlowConfig,
        groups: tuple[str, ...],
        *,
        offsets: FlowOffsets,
        source: ClusterGroups,
        target: ClusterGroups,
        writer: InternalWriter,
        prepare: Callable[[], object] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.flow = flow
        self.groups = groups
        self.policy = flow.replication_policy()
        self.offsets = offsets
        self._source = source
        self._target = target
        self._prepare = prepare
        self._writer = writer
        self._clock = clock
        self._emitted: dict[tuple[str, str, int], Checkpoint] = {}
        self._seen: dict[tuple[str, Key], tuple[int, float]] = {}  # commit -> first seen
        self._replicated: dict[str, bool] = {}
        self.status: dict[str, GroupStatus] = {g: GroupStatus() for g in groups}
        # Per group since the last take_metrics(): checkpoints written, their top latency.
        self._window: dict[str, tuple[int, int]] = {}
        self._window_lock = threading.Lock()

    def prepare(self) -> None:
        """Create the checkpoints topic on the target unless it exists."""
        self._prepare()

    def _replicates(self, topic: str) -> bool:
        known = self._replicated.get(topic)
        if known is None:
            known = reason_not_replicated(self.flow, self.policy, topic) is None
            self._replicated[topic] = known
        return known

    def emit(self) -> int:
        """Translate every group's commits and write the checkpoints that changed."""
        self.offsets.refresh()
        pending: list[tuple[Checkpoint, float]] = []
        lowest: dict[Key, int] = {}  # the lowest commit of this task's groups, per partition
        now = self._clock()
        for group in self.groups:
            status = self.status[group]
            try:
                commits = self._source.committed(group)
            except Exception as exc:  # noqa: BLE001 - this group waits; others go on
                status.error = str(exc)
                continue
            status.error = None
            status.translated, status.untranslated = 0, {}
            for (topic, partition), offset in sorted(commits.items()):
                if not self._replicates(topic):
                    continue
                lowest[(topic, partition)] = min(lowest.get((topic, partition), offset), offset)
                seen = self._seen.get((group, (topic, partition)))
                if seen is None or seen[0] != offset:
                    self._seen[(group, (topic, partition))] = seen = (offset, now)
                answer = self.offsets.forward(topic, partition, offset)
                if answer.offset is None:
                    status.untranslated[f"{topic}-{partition}"] = answer.reason
                    continue
                status.translated += 1
                remote = self.offsets.remote_topic(topic)
                checkpoint = Checkpoint(group, remote, partition, offset, answer.offset, "")
                last = self._emitted.get((group, remote, partition))
                if (
                    last is None
                    or offset < last.upstream_offset
                    or answer.offset > last.downstream_offset
                ):
                    pending.append((checkpoint, seen[1]))
        self.offsets.forget(lowest, keep=MAX_SYNCS_KEPT)
        if pending:
            self._writer.write((c.encode_key(), c.encode_value()) for c, _ in pending)
            written = self._clock()
            for checkpoint, first_seen in pending:
                key = (checkpoint.consumer_group_id, checkpoint.topic, checkpoint.partition)
                self._emitted[key] = checkpoint
                status = self.status[checkpoint.consumer_group_id]
                latency = int((written - first_seen) * 1000)
                status.checkpoint_latency_ms = latency
                status.checkpoint_latency_max_ms = max(status.checkpoint_latency_max_ms, latency)
                status.checkpoints_written += 1
                with self._window_lock:
                    count, top = self._window.get(checkpoint.consumer_group_id, (0, 0))
                    self._window[checkpoint.consumer_group_id] = (count + 1, max(top, latency))
        return len(pending)

    def take_metrics(self) -> tuple[GroupMetrics, ...]:
        """Each group's checkpoints since the last call (how many, the slowest: its
        commit first seen on the source to its checkpoint written on the target) and its
        partitions not translated at the last round; the next window starts empty."""
        with self._window_lock:
            window, self._window = self._window, {}
        out = []
        for group in self.groups:
            count, top = window.get(group, (0, 0))
            out.append(
                GroupMetrics(
                    group=group,
                    checkpoints=count,
                    checkpoint_latency_ms=top if count else None,
                    untranslated_partitions=len(self.status[group].untranslated),
                )
            )
        return tuple(out)

    def sync_groups(self) -> None:
        """Commit the latest translations for each group on the target, where safe."""
        latest: dict[str, dict[Key, int]] = {}
        for (group, topic, partition), checkpoint in self._emitted.items():
            latest.setdefault(group, {})[(topic, partition)] = checkpoint.downstream_offset
        for group in self.groups:
            self.status[group].sync = self._sync_group(group, latest.get(group, {}))

    def _sync_group(self, group: str, translated: Mapping[Key, int]) -> str:
        where = self.flow.target
        if not translated:
            return "skipped: no translated offsets yet"
        try:
            state = self._target.activity(group)
            if state.active:
                return f"skipped: {state.members} active members on {where}"
            current = self._target.committed(group)
            ahead = {k: v for k, v in translated.items() if current.get(k, -1) < v}
            behind = len(translated) - len(ahead)
            self._target.set(group, ahead)
        except Exception as exc:  # noqa: BLE001 - reported; tried again next interval
            return f"failed: {exc}"
        note = f"; {behind} partitions left (already at or past the translation)" if behind else ""
        return f"set {len(ahead)} partitions{note}"

    def close(self) -> None:
        self.offsets.close()
        self._writer.close()


class CheckpointRunner(TaskThread):
    """Runs one :class:`Checkpointer` until the driver stops or :meth:`halt`."""

    def __init__(self, task_id: str, task: Checkpointer, stop: threading.Event) -> None:
        super().__init__(f"checkpoints {task_id}", stop)
        self.task_id = task_id
        self.task = task

    def run(self) -> None:
        flow = self.task.flow
        emit_every = float(flow.emit_checkpoints_interval_seconds)
        sync_every = float(flow.sync_group_offsets_interval_seconds)
        syncing = flow.sync_group_offsets_enabled
        prepared = False
        next_emit = next_sync = time.monotonic()
        try:
            while not self.done():
                now = time.monotonic()
                try:
                    if not prepared:
                        self.task.prepare()
                        prepared = True
                    if now >= next_emit:
                        self.task.emit()
                        next_emit = now + emit_every
                    if syncing and now >= next_sync:
                        self.task.sync_groups()
                        next_sync = now + sync_every
                except Exception as exc:  # noqa: BLE001 - logged; retried, others go on
                    log.error("%s: checkpoints failed: %s", self.task_id, exc)
                    next_emit = now + RETRY_SECONDS
                due = min(next_emit, next_sync) if syncing else next_emit
                self.pause(max(0.05, due - time.monotonic()))
        finally:
            self.task.close()
