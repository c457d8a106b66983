"""A flow's two threads (srm_driver.flow_worker): the remote-topic work and the planning
never wait for each other. At 30,000 partitions a refresh of the remote topics outlasts
its interval and a planning pass lasts minutes; on one thread a new topic waited behind
the planning and a broken unit's partitions behind the topic work. And while Spark
starts, remote topics are kept in step but nothing is handed to copying."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping

from srm_driver.flow_worker import FlowWorker

TopicPartition = tuple[str, int]
FLOW = "primary->backup"
WAIT_S = 10.0  # (a bound on a wait for something that happens at once, not a timing)


class Topics:
    """A flow's remote topics: every owned partition ready at once, the same answer while
    nothing changed (as FlowTopics.ready); a refresh hangs while ``hang`` is set."""

    def __init__(self) -> None:
        self.asked: list[frozenset[TopicPartition]] = []
        self.hang = threading.Event()
        self.hanging = threading.Event()
        self.release = threading.Event()
        self._answer: dict[frozenset[TopicPartition], Mapping[TopicPartition, str]] = {}

    def ready(self, owned: frozenset[TopicPartition]) -> Mapping[TopicPartition, str]:
        self.asked.append(owned)
        if self.hang.is_set():
            self.hanging.set()
            self.release.wait(WAIT_S)
        return self._answer.setdefault(owned, {tp: f"primary.{tp[0]}" for tp in owned})

    def largest_record_bytes(self) -> int:
        return 1_000_000

    def round_trip_ms(self) -> float | None:
        return None


class Copy:
    """Accepts partitions once ``up`` (Spark started); counts planning passes, a pass
    hangs while ``hang`` is set."""

    def __init__(self, *, up: bool = True) -> None:
        self.up = up
        self.passed = threading.Event()
        self.hang = threading.Event()
        self.hanging = threading.Event()
        self.release = threading.Event()
        self.owned: list[Mapping[TopicPartition, str]] = []
        self.handed = threading.Event()

    def accepting(self) -> bool:
        return self.up

    def prepare(self, flow: str) -> None: ...

    def size_clients(self, *_args: object) -> None: ...

    def set_owned(self, flow: str, owned: Mapping[TopicPartition, str]) -> None:
        self.owned.append(owned)
        self.handed.set()

    def work(self, flow: str) -> None:
        if self.hang.is_set():
            self.hanging.set()
            self.release.wait(WAIT_S)
        self.passed.set()


@contextlib.contextmanager
def running(topics: Topics, copy: Copy) -> Iterator[FlowWorker]:
    """The flow's worker with both threads started; stopped (and any hang let go) after."""
    stop = threading.Event()
    worker = FlowWorker(FLOW, topics, copy, stop)  # type: ignore[arg-type]
    worker.start()
    try:
        yield worker
    finally:
        stop.set()
        topics.release.set()
        copy.release.set()
        worker.wake()
        worker.join(WAIT_S)


def test_partitions_are_planned_while_a_refresh_of_the_remote_topics_hangs() -> None:
    topics, copy = Topics(), Copy()
    with running(topics, copy) as worker:
        worker.want(frozenset({("orders", 0)}))
        assert copy.handed.wait(WAIT_S)
        topics.hang.set()
        worker.want(frozenset({("orders", 0), ("orders", 1)}))
        assert topics.hanging.wait(WAIT_S), "the topics thread is in its refresh"
        copy.passed.clear()
        assert copy.passed.wait(WAIT_S), "the planning thread makes passes meanwhile"


def test_a_new_topic_is_handed_over_while_a_planning_pass_hangs() -> None:
    topics, copy = Topics(), Copy()
    with running(topics, copy) as worker:
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


def test_a_flow_creates_its_remote_topics_while_spark_starts_and_hands_them_over_after() -> None:
    topics, copy = Topics(), Copy(up=False)
    worker = FlowWorker(FLOW, topics, copy, threading.Event())  # type: ignore[arg-type]
    owned = frozenset({("orders", 0), ("orders", 1)})
    worker.want(owned)
    worker.topics.step()
    worker.topics.step()
    assert topics.asked == [owned, owned], "remote topics are kept in step meanwhile"
    assert copy.owned == [], "nothing is handed over before Spark is up"
    copy.up = True
    worker.topics.step()
    assert copy.owned == [{("orders", 0): "primary.orders", ("orders", 1): "primary.orders"}]
    worker.topics.step()
    assert len(copy.owned) == 1, "handed over once, not at every pass"
