"""The heartbeat task of a flow: ``heartbeats`` on the target, one record per interval.

Runs for every ordered pair with ``emit.heartbeats.enabled``, enabled flow or not, so
every cluster that could be a source has a ``heartbeats`` topic, and flow ``A->B`` copies
A's as ``A.heartbeats`` to B: proof that the A->B path works end to end.

Each pair beats on a thread of its own (:class:`HeartbeatEmitter`): a target cluster
that does not answer (its site is down) blocks its own pair for the write timeout, and
no other pair's heartbeats are late because of it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from srm_common.config.model import FlowConfig
from srm_common.domain.records import Heartbeat

from srm_driver.internal_writer import InternalWriter
from srm_driver.task_thread import TaskThread

log = logging.getLogger(__name__)

RETRY_SECONDS = 5.0


class HeartbeatTask:
    """Emits ``Heartbeat(source, target, now)`` every ``emit.heartbeats.interval.seconds``
    through ``writer`` (to the flow's heartbeats topic); ``prepare`` creates that topic
    (both made by the composition root, :func:`srm_driver.bootstrap.heartbeat_task`)."""

    def __init__(
        self, flow: FlowConfig, *, writer: InternalWriter, prepare: Callable[[], object]
    ) -> None:
        self.flow = flow
        self.topic = writer.topic
        self.interval = float(flow.emit_heartbeats_interval_seconds)
        self._writer = writer
        self._prepare = prepare
        self._next_due = 0.0
        self.emitted = 0
        # When the last heartbeat was written (wall ms), and whether the last try failed.
        self.last_beat_ms: int | None = None
        self.failing = False

    def prepare(self) -> None:
        self._prepare()

    def seconds_until_due(self, now: float | None = None) -> float:
        return max(0.0, self._next_due - (time.monotonic() if now is None else now))

    def beat(self) -> None:
        """Emit one heartbeat now and schedule the next."""
        heartbeat = Heartbeat(self.flow.source, self.flow.target, int(time.time() * 1000))
        self._writer.write([(heartbeat.encode_key(), heartbeat.encode_value())], timeout=30)
        self.emitted += 1
        self.last_beat_ms, self.failing = heartbeat.timestamp_ms, False
        self._next_due = time.monotonic() + self.interval

    def close(self) -> None:
        self._writer.close()


class HeartbeatEmitter(TaskThread):
    """Runs one :class:`HeartbeatTask` until the driver stops or :meth:`halt` is called."""

    def __init__(self, flow: FlowConfig, stop: threading.Event, task: HeartbeatTask) -> None:
        super().__init__(f"heartbeats {flow.name}", stop)
        self.flow_name = flow.name
        self.task = task

    def run(self) -> None:
        prepared = False
        while not self.done():
            pause = 0.0
            try:
                if not prepared:
                    self.task.prepare()
                    prepared = True
                if self.task.seconds_until_due() == 0:
                    self.task.beat()
            except Exception as exc:  # noqa: BLE001 - logged; this pair retries, others go on
                log.error("%s: heartbeat failed: %s", self.flow_name, exc)
                self.task.failing = True
                pause = RETRY_SECONDS
            self.pause(max(pause, 0.05, self.task.seconds_until_due()))
        self.task.close()
