"""One flow's blocking work on a thread of its own.

The runtime's loop decides *what* this driver copies (the task source's assignment); each
flow's worker does what takes a cluster's time: keep the flow's remote topics in step
(:class:`FlowTopics`: create, grow, sync configs), hand the partitions whose remote topic
is ready to copying, and reconcile and plan the flow's pending partitions
(:meth:`CopyService.work`). So a cluster that is slow or does not answer holds up only
the flows that use it: the other flows' reconciles, the runtime's loop (assignment,
heartbeats of the group, metrics) and the slots' answers go on.

Work follows what changed: the partitions are handed to copying again only when the set
of ready ones changed, and nothing of a flow's 10,000 partitions is walked while they
copy, except the planner's look for pending ones (a fraction of a millisecond).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from srm_driver.copying.service import CopyService
from srm_driver.flow_topics import FlowTopics
from srm_driver.task_thread import TaskThread

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
PASS_SECONDS = 0.2
_NONE: Mapping[TopicPartition, str] = {}


class FlowWorker(TaskThread):
    """See the module docstring. The runtime calls :meth:`want`; the rest is the thread's."""

    def __init__(
        self, name: str, topics: FlowTopics, copy: CopyService, stop: threading.Event
    ) -> None:
        super().__init__(f"flow {name}", stop)
        self.flow = name
        self.topics = topics
        self._copy = copy
        self._owned: frozenset[TopicPartition] = frozenset()
        self._given: Mapping[TopicPartition, str] | None = None
        self._wake = threading.Event()

    def want(self, owned: frozenset[TopicPartition]) -> None:
        """Copy these upstream partitions of the flow (from the runtime's loop)."""
        if owned is not self._owned:
            self._owned = owned
            self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def run(self) -> None:
        while not self.done():
            self._wake.clear()
            try:
                self.step()
            except Exception as exc:  # noqa: BLE001 - one bad pass must not end the flow
                log.exception("%s: pass failed: %s", self.flow, exc)
            self._wake.wait(PASS_SECONDS)

    def step(self) -> None:
        """One pass: remote topics, partitions handed over if they changed, plans."""
        owned = self._owned
        if owned:
            self._copy.prepare(self.flow)
        ready = self.topics.ready(owned) if owned else _NONE
        if owned:  # before any partition of a topic that allows larger records is planned
            topics = self.topics
            self._copy.size_clients(
                self.flow, topics.largest_record_bytes(), topics.round_trip_ms()
            )
        if ready is not self._given and self._copy.accepting():
            self._copy.set_owned(self.flow, ready)
            self._given = ready
        if not self.done():
            self._copy.work(self.flow)
