"""EventLogReader with a fake topic: errors keep what was read, records that are not
events are skipped, a newer event stops the reader, a lost log is reported and a
restore of it taken up."""

from __future__ import annotations

import json
from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException
from srm_common.adapters import kafka_clients
from srm_common.adapters.event_log_reader import EventLogReader
from srm_common.adapters.event_log_reads import read_log, read_logs
from srm_common.control.events import Envelope, FlowEnabled, LogStarted, encode
from srm_common.errors import ControlLogError
from srm_common.testing import FAKE_CONTROL, FakeEventTopic, FakeLogConsumer, _Message

SETTINGS = FAKE_CONTROL


def envelope(event: object) -> Envelope:
    return Envelope(event, 1, "test")  # type: ignore[arg-type]


def reader_of(topic: FakeEventTopic, known_log: str | None = None) -> EventLogReader:
    reader = EventLogReader(
        SETTINGS,
        client_id="t",
        known_log=known_log,
        consumer=topic.consumer(),  # type: ignore[arg-type]
        admin=topic.admin(),  # type: ignore[arg-type]
    )
    reader.CHECK_S = 0.0  # look at the topic id at every poll
    return reader


def drain(reader: EventLogReader, polls: int = 6) -> list[Envelope]:
    """Poll as a follower does: a read error is logged and polled again."""
    events: list[Envelope] = []
    for _ in range(polls):
        try:
            events.extend(reader.poll(0))
        except ControlLogError:
            pass
    return events


class BatchConsumer:
    def __init__(self, batches: list[list[_Message]]) -> None:
        self.batches = batches

    def assign(self, _partitions: list[object]) -> None:
        pass

    def consume(self, _count: int, _timeout: float) -> list[_Message]:
        return self.batches.pop(0) if self.batches else []

    def position(self, partitions: list[object]) -> list[object]:
        return partitions  # offsets unknown (-1001): the reader keeps its position


def event(offset: int) -> _Message:
    return _Message(offset, encode(Envelope(FlowEnabled(f"f{offset}"), 1, "t")))


def batch_reader(batches: list[list[_Message]]) -> EventLogReader:
    return EventLogReader(
        SETTINGS,
        client_id="t",
        consumer=BatchConsumer(batches),  # type: ignore[arg-type]
        admin=FakeEventTopic().admin(),  # type: ignore[arg-type]
    )


def test_events_of_a_batch_with_an_error_are_returned_by_the_next_poll() -> None:
    broken = _Message(-1, error=KafkaError(KafkaError._TRANSPORT))  # noqa: SLF001
    log = batch_reader([[event(0), event(1), broken, event(2)], [event(3)]])
    with pytest.raises(ControlLogError):
        log.poll()
    assert [e.offset for e in log.poll()] == [0, 1, 2, 3]


def test_end_of_partition_sets_at_end() -> None:
    eof = _Message(1, error=KafkaError(KafkaError._PARTITION_EOF))  # noqa: SLF001
    log = batch_reader([[event(0), eof]])
    assert [e.offset for e in log.poll()] == [0]
    assert log.at_end


def test_a_record_that_is_not_an_event_is_skipped_and_shown_with_its_offset() -> None:
    topic = FakeEventTopic()
    topic.append(envelope(LogStarted("L1", None, "")), b"junk\n", envelope(FlowEnabled("a->b")))
    reader = reader_of(topic)
    assert [e.offset for e in reader.read_to_end(5)] == [0, 4]
    status = reader.status()
    assert status["problem"] is None and status["skipped"] == 1
    assert status["skipped_recent"][0]["at"] == "srm-control.log.internal-0@2"  # type: ignore[index]


def test_an_event_of_a_newer_srm_stops_the_reader_after_what_came_before() -> None:
    topic = FakeEventTopic()
    newer = json.dumps({"type": "flow.enabled", "version": 7, "at": 1, "data": {}})
    topic.append(envelope(LogStarted("L1", None, "")), newer.encode())
    reader = reader_of(topic)
    assert [e.offset for e in reader.read_to_end(5)] == [0]
    assert reader.problem is not None and reader.problem.kind == "newer"
    topic.append(envelope(FlowEnabled("a->b")))
    assert drain(reader) == []


def test_a_deleted_log_is_lost_and_a_restore_of_it_is_read_from_its_start() -> None:
    topic = FakeEventTopic()
    topic.append(envelope(LogStarted("L1", None, "")), envelope(FlowEnabled("a->b")))
    reader = reader_of(topic)
    assert len(reader.read_to_end(5)) == 2
    topic.delete()
    with pytest.raises(ControlLogError):
        reader.poll(0)  # the consumer's own error, as librdkafka reports it
    drain(reader)
    assert reader.problem is not None and reader.problem.kind == "lost"
    assert "was deleted" in reader.problem.message

    # Someone starts another log in its place: still lost, nothing folded.
    topic.recreate()
    topic.append(envelope(LogStarted("X", None, "")), envelope(FlowEnabled("x->y")))
    assert drain(reader) == []
    assert reader.problem is not None and "holds log X, not the log L1" in reader.problem.message

    # srm-control restore writes a log restored from L1: taken up from its first event.
    topic.recreate()
    topic.append(envelope(LogStarted("L2", "L1", "audit export")), envelope(FlowEnabled("a->b")))
    events = drain(reader)
    assert [e.offset for e in events] == [0, 2]
    assert reader.problem is None and reader.take_restart() and not reader.take_restart()
    assert reader.log_id == "L2"


def test_a_topic_recreated_under_the_reader_is_lost_not_read_on() -> None:
    topic = FakeEventTopic()
    topic.append(envelope(LogStarted("L1", None, "")), envelope(FlowEnabled("a->b")))
    reader = reader_of(topic)
    reader.read_to_end(5)
    topic.recreate()  # empty: the reader's position is past its end
    assert drain(reader) == []
    assert reader.problem is not None and reader.problem.kind == "lost"


def test_a_reader_that_knew_a_log_folds_nothing_of_another() -> None:
    topic = FakeEventTopic()
    topic.append(envelope(LogStarted("X", None, "")), envelope(FlowEnabled("x->y")))
    reader = reader_of(topic, known_log="L1")
    assert reader.read_to_end(5) == []
    assert reader.problem is not None and reader.problem.kind == "lost"

    topic = FakeEventTopic()
    topic.append(envelope(FlowEnabled("a->b")), envelope(LogStarted("L1", None, "")))
    reader = reader_of(topic, known_log="L1")
    assert [e.offset for e in reader.read_to_end(5)] == [0, 2], "held until shown, then all"


def test_a_missing_log_that_nobody_knew_is_an_error_not_a_loss() -> None:
    topic = FakeEventTopic()
    topic.delete()
    with pytest.raises(ControlLogError, match="does not exist on backup: no coordinator has"):
        reader_of(topic).read_to_end(0.5)
    lost = reader_of(topic, known_log="L1")
    assert lost.read_to_end(5) == []
    assert lost.problem is not None and "does not exist" in lost.problem.message


class LibrdkafkaLikeConsumer(FakeLogConsumer):
    """Waits where librdkafka's consumer does, counted in ``waited`` (not slept): a call
    to consume() that does not fill its batch lasts its whole timeout, the events and the
    end of the partition come in separate calls, and a partition assigned before the
    consumer knew its leader is read only after a 500 ms retry timer."""

    def __init__(self, topic: FakeEventTopic) -> None:
        super().__init__(topic)
        self.waited = 0.0
        self.knows_leader = False
        self.timer = 0.0

    def list_topics(self, topic: str | None = None, timeout: float = 0) -> object:
        self.knows_leader = True
        return super().list_topics(topic, timeout)

    def assign(self, partitions: list[object]) -> None:
        super().assign(partitions)
        self.timer = 0.0 if self.knows_leader else 0.5

    def consume(self, count: int, timeout: float) -> list[_Message]:
        if self.timer > 0:
            waiting = min(timeout, self.timer)
            self.timer -= waiting
            self.waited += waiting
            return []
        messages = super().consume(count, 0)
        if len(messages) < count:
            self.waited += timeout
        return messages


def test_a_read_to_the_end_ends_about_when_the_end_arrives() -> None:
    topic = FakeEventTopic()
    topic.append(envelope(LogStarted("L1", None, "")), envelope(FlowEnabled("a->b")))
    consumer = LibrdkafkaLikeConsumer(topic)
    reader = EventLogReader(
        SETTINGS,
        client_id="t",
        consumer=consumer,  # type: ignore[arg-type]
        admin=topic.admin(),  # type: ignore[arg-type]
    )
    assert len(reader.read_to_end(5)) == 2
    # Two polls (the events, then the end): 0.1 s in 0.05 s steps; 1 s in 0.5 s ones, and
    # 0.5 s more when the partition is assigned before its leader is known.
    assert consumer.waited <= 0.2, f"the read waited {consumer.waited:.2f} s in its polls"


def test_a_one_shot_read_asks_the_broker_for_a_short_wait_at_the_end_and_a_follower_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = FakeEventTopic()
    topic.append(envelope(LogStarted("L1", None, "")), envelope(FlowEnabled("a->b")))
    configs: list[dict[str, str]] = []

    def consumer(config: dict[str, str]) -> FakeLogConsumer:
        configs.append(config)
        return topic.consumer()

    monkeypatch.setattr(kafka_clients, "consumer", consumer)
    monkeypatch.setattr(kafka_clients, "admin", lambda _config: topic.admin())
    assert len(read_log(SETTINGS, timeout=5)) == 2
    assert set(read_logs([SETTINGS], timeout=5)) == {SETTINGS.name}
    EventLogReader(SETTINGS, client_id="follower").close()
    one_shot, in_threads, follower = configs
    assert int(one_shot["fetch.wait.max.ms"]) <= 100
    assert int(in_threads["fetch.wait.max.ms"]) <= 100
    assert "fetch.wait.max.ms" not in follower, "an idle log is fetched twice a second"


class DownLogAdmin:
    """The log's cluster down while ``up`` is False: a describe gets no answer (librdkafka
    spends two thirds of a core while one waits) and a metadata request fails at once."""

    def __init__(self, topic: FakeEventTopic) -> None:
        self.answering = topic.admin()
        self.up = False
        self.describes = 0

    def describe_topics(self, topics: object, request_timeout: float = 0) -> dict[str, object]:
        self.describes += 1
        if self.up:
            return self.answering.describe_topics(topics, request_timeout)
        future: Future[object] = Future()
        future.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out")))  # noqa: SLF001
        return {SETTINGS.events_topic: future}

    def list_topics(self, topic: str | None = None, timeout: float = 0) -> object:
        if not self.up:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "transport failure"))  # noqa: SLF001
        return object()


def test_a_log_whose_cluster_is_down_is_not_described_until_it_answers_metadata() -> None:
    topic = FakeEventTopic()
    admin = DownLogAdmin(topic)
    reader = EventLogReader(
        SETTINGS,
        client_id="t",
        consumer=topic.consumer(),
        admin=admin,  # type: ignore[arg-type]
    )
    reader.CHECK_S = 0.0  # look at the topic id at every poll
    drain(reader, polls=6)
    assert admin.describes == 1  # the one that got no answer; then metadata first
    admin.up = True
    drain(reader, polls=3)
    assert admin.describes == 4  # one a poll again
