"""The event log's contract, run on the in-memory log and on Kafka: what a follower
(coordinator, driver, gateway) relies on, so the fake every unit test uses cannot drift
from the real log.

One suite (:class:`EventLogContract`), two logs: :class:`TestInMemoryEventLog`
(:class:`srm_common.testing.InMemoryEventLog`, no cluster: it runs with the unit tests)
and :class:`TestKafkaEventLog` (the Kafka adapters ``srm_common.adapters.event_log_*``
on the session's ``primary``, a fresh prefix per test). The suite lives here, not in
``libs/srm_common/tests/contract``, because the clusters are this folder's fixtures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Protocol

import pytest
from confluent_kafka import Producer
from srm_common.adapters.control_topics import ensure_control_topics
from srm_common.adapters.event_log_end import EventLogEnd
from srm_common.adapters.event_log_reader import EventLogReader
from srm_common.adapters.event_log_writer import EventLogWriter
from srm_common.config.control import ControlSettings
from srm_common.control.events import (
    Envelope,
    Event,
    FlowEnabled,
    LogStarted,
    TopicsAllowed,
    encode,
)
from srm_common.errors import ControlLogError
from srm_common.log_follower import LogFollower, LogReader
from srm_common.testing import FAKE_CONTROL, InMemoryEventLog
from srm_harness.clients import delete_topics, list_topics
from srm_harness.waits import wait_until


class LogEnd(Protocol):
    def query(self, timeout: float = ...) -> int: ...
    def topic_id(self, timeout: float = ...) -> str | None: ...


class Writer(Protocol):
    def append(self, envelopes: list[Envelope]) -> list[Envelope]: ...


class LogUnderTest(Protocol):
    """One event log and the ways a test writes to or breaks it."""

    def writer(self) -> Writer: ...
    def reader(self, known_log: str | None = None) -> LogReader: ...
    def end(self) -> LogEnd: ...
    def append_raw(self, value: bytes) -> None: ...
    def delete(self) -> None: ...
    def recreate(self) -> None: ...


def envelopes(*events: Event) -> list[Envelope]:
    return [Envelope(event, 1_700_000_000_000 + i, "contract") for i, event in enumerate(events)]


def follow_until(follower: LogFollower, done: Callable[[], bool], timeout: float = 30) -> None:
    """Step the follower until ``done`` (the readers look at the topic id every second)."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"not within {timeout} s: {follower.status()}"
        try:
            follower.step(0.2)
        except ControlLogError:
            time.sleep(0.1)


class EventLogContract:
    """The tests; a subclass gives the ``log`` fixture."""

    def test_events_are_read_back_in_order_at_the_offsets_the_append_returned(
        self, log: LogUnderTest
    ) -> None:
        written = log.writer().append(
            envelopes(
                LogStarted("L1", None, ""), FlowEnabled("a->b"), TopicsAllowed("a->b", ("x",))
            )
        )
        follower = LogFollower(lambda: log.reader())
        folded = follower.read_to_end(30)
        assert [e.offset for e in folded] == [e.offset for e in written]
        assert [e.event for e in folded] == [e.event for e in written]
        assert follower.state.log_id == "L1" and follower.state.flow("a->b").enabled
        more = log.writer().append(envelopes(FlowEnabled("b->c")))
        follow_until(follower, lambda: follower.state.flow("b->c").enabled)
        assert follower.state.offset == more[0].offset

    def test_after_reading_to_where_the_log_ends_the_position_is_there(
        self, log: LogUnderTest
    ) -> None:
        """The driver's lease rests on it: read up to the end asked at m, and every event
        committed before m is folded."""
        log.writer().append(envelopes(LogStarted("L1", None, ""), FlowEnabled("a->b")))
        log.writer().append(envelopes(FlowEnabled("b->c")))
        follower = LogFollower(lambda: log.reader())
        follower.read_to_end(30)
        end = log.end()
        target = end.query()
        follow_until(follower, lambda: follower.position >= target)
        assert follower.state.flow("b->c").enabled
        assert end.topic_id() == follower.topic_id is not None

    def test_a_record_that_is_not_an_event_is_skipped_and_reported_with_its_offset(
        self, log: LogUnderTest
    ) -> None:
        log.writer().append(envelopes(LogStarted("L1", None, "")))
        log.append_raw(b"junk\n")
        log.writer().append(envelopes(FlowEnabled("a->b")))
        follower = LogFollower(lambda: log.reader())
        follower.read_to_end(30)
        status = follower.status()
        assert status["skipped"] == 1 and follower.state.flow("a->b").enabled
        assert follower.problem is None

    def test_an_event_of_a_newer_srm_stops_the_folding_after_what_came_before(
        self, log: LogUnderTest
    ) -> None:
        log.writer().append(envelopes(LogStarted("L1", None, ""), FlowEnabled("a->b")))
        newer = encode(envelopes(FlowEnabled("b->c"))[0]).replace(b'"version":1', b'"version":99')
        assert newer != encode(envelopes(FlowEnabled("b->c"))[0]), "the version was changed"
        log.append_raw(newer)
        log.writer().append(envelopes(FlowEnabled("c->a")))
        follower = LogFollower(lambda: log.reader())
        follower.read_to_end(30)
        assert follower.problem is not None and follower.problem.kind == "newer"
        assert follower.state.flow("a->b").enabled and not follower.state.flow("c->a").enabled

    def test_a_deleted_log_is_lost_and_its_restore_is_read_from_its_start(
        self, log: LogUnderTest
    ) -> None:
        log.writer().append(envelopes(LogStarted("L1", None, ""), FlowEnabled("a->b")))
        follower = LogFollower(lambda: log.reader())
        follower.read_to_end(30)
        log.delete()
        follow_until(follower, lambda: follower.problem is not None)
        assert follower.problem is not None and follower.problem.kind == "lost"
        assert follower.state.flow("a->b").enabled, "the last state stays"
        log.recreate()
        log.writer().append(
            envelopes(LogStarted("L2", "L1", "contract"), TopicsAllowed("a->b", ("y",)))
        )
        follow_until(follower, lambda: follower.state.log_id == "L2")
        assert follower.problem is None
        assert not follower.state.flow("a->b").enabled, "a restore starts a new history"
        assert follower.state.flow("a->b").topics == ("y",)

    def test_a_reader_that_knew_another_log_folds_nothing_of_this_one(
        self, log: LogUnderTest
    ) -> None:
        log.writer().append(envelopes(LogStarted("L2", None, ""), FlowEnabled("a->b")))
        follower = LogFollower(lambda: log.reader(known_log="L1"))
        follower.read_to_end(30)
        assert follower.problem is not None and follower.problem.kind == "lost"
        assert follower.state.offset == -1


class TestInMemoryEventLog(EventLogContract):
    @pytest.fixture
    def log(self) -> LogUnderTest:
        return InMemoryLog()


class InMemoryLog:
    def __init__(self) -> None:
        self.memory = InMemoryEventLog()

    def writer(self) -> Writer:
        return self.memory.writer()  # type: ignore[return-value]

    def reader(self, known_log: str | None = None) -> LogReader:
        return self.memory.reader(known_log)

    def end(self) -> LogEnd:
        return self.memory.log_end()

    def append_raw(self, value: bytes) -> None:
        self.memory.append(value)

    def delete(self) -> None:
        self.memory.delete()

    def recreate(self) -> None:
        self.memory.recreate()


@pytest.mark.integration
class TestKafkaEventLog(EventLogContract):
    @pytest.fixture
    def log(self, kafka, unique_name) -> Iterator[LogUnderTest]:  # type: ignore[no-untyped-def]
        settings = replace(
            FAKE_CONTROL,
            client={"bootstrap.servers": kafka["primary"]},
            prefix=unique_name("contract"),
        )
        kafka_log = KafkaLog(settings)
        yield kafka_log
        kafka_log.close()
        delete_topics(
            kafka["primary"],
            [settings.events_topic, settings.drivers_topic, settings.election_topic],
        )


class KafkaLog:
    def __init__(self, settings: ControlSettings) -> None:
        self.settings = settings
        ensure_control_topics(settings)
        self._writer: EventLogWriter | None = None
        self._readers: list[EventLogReader] = []

    def writer(self) -> Writer:
        if self._writer is None:
            self._writer = EventLogWriter(self.settings, client_id="contract-writer")
            self._writer.fence()
        return self._writer  # type: ignore[return-value]

    def reader(self, known_log: str | None = None) -> LogReader:
        reader = EventLogReader(
            self.settings, client_id=f"contract-{time.time_ns()}", known_log=known_log
        )
        self._readers.append(reader)
        return reader

    def end(self) -> LogEnd:
        return EventLogEnd(self.settings)

    def append_raw(self, value: bytes) -> None:
        producer = Producer({"bootstrap.servers": self.settings.client["bootstrap.servers"]})
        producer.produce(self.settings.events_topic, value=value)
        assert producer.flush(30) == 0

    def delete(self) -> None:
        servers = self.settings.client["bootstrap.servers"]
        delete_topics(servers, [self.settings.events_topic])
        wait_until(
            lambda: self.settings.events_topic not in list_topics(servers),
            30,
            "the events topic is gone",
        )
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def recreate(self) -> None:
        wait_until(self._created, 60, "the events topic is created again")

    def _created(self) -> bool:
        try:
            ensure_control_topics(self.settings)
        except ControlLogError:
            return False  # the brokers may still be removing it for a moment
        return True

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        for reader in self._readers:
            reader.close()
