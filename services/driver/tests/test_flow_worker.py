"""A flow's two threads (srm_driver.flow_worker): the remote-topic work and the planning
never wait for each other. At 30,000 partitions a refresh of the remote topics outlasts
its interval and a planning pass lasts minutes; on one thread a new topic waited behind
the planning and a broken unit's partitions behind the topic work."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from srm_driver.flow_worker import FlowWorker

TopicPartition = tuple[str, int]
FLOW = "primary->backup"
WAIT_S = 10.0  # (a bound on a wait for something that happens at once, not a timing)


class Topics:
    """Every owned partition ready at once; the refresh hangs while ``hang`` is set."""

    def __init__(self) -> None:
        self.hang = threading.Event()
        self.hanging = threading.Event()
        self.release = threading.Event()
        self._answer: dict[frozenset[TopicPartition], Mapping[TopicPartition, str]] = {}

    def ready(self, owned: frozenset[TopicPartition]) -> Mapping[TopicPartition, str]:
        if self.hang.is_set():
            self.hanging.set()
            self.release.wait(WAIT_S)
        return self._answer.setdefault(owned, {tp: f"primary.{tp[0]}" for tp in owned})

    def largest_record_bytes(self) -> int:
        return 1_000_000

    def round_trip_ms(self) -> float | None:
        return None


class Copy:
    """Counts planning passes; a pass hangs while ``hang`` is set."""

    def __init__(self) -> None:
        self.passes = 0
        self.passed = threading.Event()
        self.hang = threading.Event()
        self.hanging = threading.Event()
        self.release = threading.Event()
        self.owned: list[Mapping[TopicPartition, str]] = []
        self.handed = threading.Event()

    def accepting(self) -> bool:
        return True

    def prepare(self, flow: str) -> None: ...

    def size_clients(self, *_args: object) -> None: ...

    def set_owned(self, flow: str, owned: Mapping[TopicPartition, str]) -> None:
        self.owned.append(owned)
        self.handed.set()

    def work(self, flow: str) -> None:
        if self.hang.is_set():
            self.hanging.set()
            self.release.wait(WAIT_S)
        self.passes += 1
        self.passed.set()


def _started(topics: Topics, copy: Copy) -> tuple[FlowWorker, threading.Event]:
    stop = threading.Event()
    worker = FlowWorker(FLOW, topics, copy, stop)  # type: ignore[arg-type]
    worker.start()
    return worker, stop


def test_partitions_are_planned_while_a_refresh_of_the_remote_topics_hangs() -> None:
    topics, copy = Topics(), Copy()
    worker, stop = _started(topics, copy)
    try:
        worker.want(frozenset({("orders", 0)}))
        assert copy.handed.wait(WAIT_S)
        topics.hang.set()
        worker.want(frozenset({("orders", 0), ("orders", 1)}))
        assert topics.hanging.wait(WAIT_S), "the topics thread is in its refresh"
        copy.passed.clear()
        assert copy.passed.wait(WAIT_S), "the planning thread makes passes meanwhile"
    finally:
        stop.set()
        topics.release.set()
        worker.wake()
        worker.join(WAIT_S)


def test_a_new_topic_is_handed_over_while_a_planning_pass_hangs() -> None:
    topics, copy = Topics(), Copy()
    worker, stop = _started(topics, copy)
    try:
        worker.want(frozenset({("orders", 0)}))
        assert copy.handed.wait(WAIT_S)
        copy.hang.set()
        assert copy.hanging.wait(WAIT_S), "the planning thread is in a long pass"
        copy.handed.clear()
        worker.want(frozenset({("orders", 0), ("payments", 0)}))
        assert copy.handed.wait(WAIT_S), "handed over without waiting for the pass"
        assert copy.owned[-1] == {
            ("orders", 0): "primary.orders",
            ("payments", 0): "primary.payments",
        }
    finally:
        stop.set()
        copy.release.set()
        worker.wake()
        worker.join(WAIT_S)
