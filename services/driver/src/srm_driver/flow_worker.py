"""One flow's blocking work on two threads of its own.

The runtime's loop decides *what* this driver copies (the task source's assignment); each
flow's worker does what takes a cluster's time, on two threads:

* the flow's *topics* thread keeps its remote topics in step (:class:`FlowTopics`:
  create, grow, follow the source, sync configs) and hands the partitions whose remote
  topic is ready to copying;
* the flow's *planning* thread reconciles and plans the flow's pending partitions
  (:meth:`CopyService.work`).

So a cluster that is slow or does not answer holds up only the flows that use it: the
other flows, the runtime's loop (assignment, heartbeats of the group, metrics) and the
slots' answers go on. And within a flow neither kind of work waits for the other: at
30,000 partitions a refresh of the remote topics (listing 3,000 topics on both clusters)
or a config sync (describing them) lasts longer than a refresh interval on loaded
brokers, and a pass planning thousands of partitions lasts minutes. On one thread a
partition whose unit broke waited behind the topic work, and a new topic's remote topic
behind the planning.

Work follows what changed: the partitions are handed to copying again only when the set
of ready ones changed (and the planning thread is woken then), and nothing of a flow's
10,000 partitions is walked while they copy, except the planner's look for pending ones
(a fraction of a millisecond).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from srm_driver.copying.service import CopyService
from srm_driver.flow_topics import FlowTopics
from srm_driver.task_thread import TaskThread

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
PASS_SECONDS = 0.2
_NONE: Mapping[TopicPartition, str] = {}


class FlowWorker:
    """See the module docstring. The runtime calls :meth:`want`, :meth:`start`,
    :meth:`wake` and :meth:`join`; the rest is the threads'."""

    def __init__(
        self, name: str, topics: FlowTopics, copy: CopyService, stop: threading.Event
    ) -> None:
        self.flow = name
        self.planning = PlanningThread(name, copy, stop)
        self.topics = TopicsThread(name, topics, copy, stop, self.planning.wake)

    def want(self, owned: frozenset[TopicPartition]) -> None:
        """Copy these upstream partitions of the flow (from the runtime's loop)."""
        self.topics.want(owned)

    def start(self) -> None:
        self.topics.start()
        self.planning.start()

    def wake(self) -> None:
        self.topics.wake()
        self.planning.wake()

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` in all for both threads (one in a slow call is left)."""
        deadline = time.monotonic() + timeout
        for thread in (self.topics, self.planning):
            thread.join(max(0.0, deadline - time.monotonic()))


class _Pass(TaskThread):
    """A thread that makes a pass every :data:`PASS_SECONDS`, or sooner when woken; a
    pass that fails is logged and the next one comes."""

    def __init__(self, flow: str, kind: str, stop: threading.Event) -> None:
        super().__init__(f"flow {flow} {kind}", stop)
        self.flow = flow
        self.kind = kind
        self._wake = threading.Event()

    def wake(self) -> None:
        self._wake.set()

    def run(self) -> None:
        while not self.done():
            self._wake.clear()
            try:
                self.step()
            except Exception as exc:  # noqa: BLE001 - one bad pass must not end the flow
                log.exception("%s: %s pass failed: %s", self.flow, self.kind, exc)
            self._wake.wait(PASS_SECONDS)

    def step(self) -> None:
        raise NotImplementedError


class TopicsThread(_Pass):
    """The flow's remote topics, and the partitions handed to copying (module docstring)."""

    def __init__(
        self,
        flow: str,
        topics: FlowTopics,
        copy: CopyService,
        stop: threading.Event,
        handed_over: Callable[[], None],
    ) -> None:
        super().__init__(flow, "topics", stop)
        self.topics = topics
        self._copy = copy
        self._handed_over = handed_over
        self._owned: frozenset[TopicPartition] = frozenset()
        self._given: Mapping[TopicPartition, str] | None = None

    def want(self, owned: frozenset[TopicPartition]) -> None:
        if owned is not self._owned:
            self._owned = owned
            self.wake()

    def step(self) -> None:
        """One pass: the flow's adapters (its internal topics before thousands of remote
        ones keep a controller busy), remote topics, partitions handed over if changed."""
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
            self._handed_over()


class PlanningThread(_Pass):
    """The flow's reconciles and plans (module docstring)."""

    def __init__(self, flow: str, copy: CopyService, stop: threading.Event) -> None:
        super().__init__(flow, "planning", stop)
        self._copy = copy

    def step(self) -> None:
        if not self.done():
            self._copy.work(self.flow)
