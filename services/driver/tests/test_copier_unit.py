"""One flow unit's copy rules with a fake consumer and producer (no Kafka): records in
order under a valid lease, the planned offset on every acknowledgement, the first copy
of a new producer acknowledged before more, a break at the first failure with whatever
the producer still holds purged, reservations (:mod:`srm_driver.copier.unit`)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Message
from srm_driver.copier import assignment
from srm_driver.copier import unit as unit_module
from srm_driver.copier.lease import Lease
from srm_driver.copier.partition import PartitionCopy
from srm_driver.copier.plan import UnitPlan, Wanted, parse_plan

REMOTE = "primary.t"


class FakeProducer:
    """Keeps what it was given; ``poll()`` delivers the acknowledgements scripted by
    ``landing`` (upstream value -> offset, or a KafkaError), in send order."""

    def __init__(self, delivered: Any) -> None:
        self.delivered = delivered
        self.sent: list[tuple[Any, ...]] = []
        self.pending: list[tuple[Any, ...]] = []
        self.next_offset: dict[int, int] = {}
        self.landing: dict[bytes, Any] = {}
        self.purged = False
        self.fatal: KafkaError | None = None
        # Reports of records the client already failed: purge() does not touch them.
        self.done: list[tuple[Any, ...]] = []
        self.polls = 0

    def produce(self, topic: str, value: bytes, key: Any, partition: int, *rest: Any) -> None:
        if self.purged:
            raise KafkaException(KafkaError(KafkaError._FATAL))
        self.sent.append((topic, value, key, partition, *rest))
        self.pending.append((topic, value, partition))

    def poll(self, timeout: float = 0) -> int:
        self.polls += 1
        if self.fatal is not None:
            fatal, self.fatal = self.fatal, None
            self.done = [m for m in self.pending if isinstance(self.landing.get(m[1]), KafkaError)]
            self.pending = [m for m in self.pending if m not in self.done]
            raise KafkaException(fatal)
        served = 0
        while self.done or self.pending:
            topic, value, partition = (self.done or self.pending).pop(0)
            landing = self.landing.get(value)
            if isinstance(landing, KafkaError):
                self.delivered(landing, Message(topic=topic, partition=partition, value=value))
            else:
                offset = landing if landing is not None else self.next_offset.get(partition, 0)
                self.next_offset[partition] = offset + 1
                self.delivered(None, Message(topic=topic, partition=partition, offset=offset,
                                             value=value))  # fmt: skip
            served += 1
        return served

    def purge(self, in_queue: bool = True, in_flight: bool = True) -> None:
        """As librdkafka: the purged records' reports are queued behind those already
        there (reports come in send order per partition)."""
        self.purged = True
        for message in self.pending:
            self.landing[message[1]] = KafkaError(KafkaError._PURGE_INFLIGHT)
        self.done += self.pending
        self.pending = []

    def __len__(self) -> int:
        return len(self.pending) + len(self.done)


class FakeConsumer:
    """librdkafka's assignment: whole (``assign``) or changed (``incremental_*``, which
    refuse a partition already assigned or not assigned, as librdkafka does)."""

    def __init__(self) -> None:
        self.assigned: list[Any] = []
        self.whole = 0  # assign() calls
        self.paused: list[Any] = []
        self.resumed: list[Any] = []
        self.sought: list[Any] = []

    def assign(self, partitions: list[Any]) -> None:
        self.whole += 1
        self.assigned = [(tp.topic, tp.partition, tp.offset) for tp in partitions]

    def incremental_assign(self, partitions: list[Any]) -> None:
        held = {a[:2] for a in self.assigned}
        if any((tp.topic, tp.partition) in held for tp in partitions):
            raise KafkaException(KafkaError(KafkaError._CONFLICT))
        self.assigned += [(tp.topic, tp.partition, tp.offset) for tp in partitions]

    def incremental_unassign(self, partitions: list[Any]) -> None:
        gone = {(tp.topic, tp.partition) for tp in partitions}
        if not gone <= {a[:2] for a in self.assigned}:
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG))
        self.assigned = [a for a in self.assigned if a[:2] not in gone]

    def pause(self, partitions: list[Any]) -> None:
        self.paused += [(tp.topic, tp.partition) for tp in partitions]

    def resume(self, partitions: list[Any]) -> None:
        self.resumed += [(tp.topic, tp.partition) for tp in partitions]

    def seek(self, tp: Any) -> None:
        self.sought.append((tp.topic, tp.partition, tp.offset))

    def get_watermark_offsets(self, tp: Any, cached: bool = False) -> tuple[int, int]:
        return (0, 42)

    def close(self) -> None:
        self.closed = True


def _plan(epoch: int = 0, reserve: int = 1000, start: int = 0, version: int = 1) -> UnitPlan:
    return UnitPlan(
        "primary->backup", version, epoch, {}, {}, None, None, "primary", "backup", 100,
        {("t", n): Wanted(1, REMOTE, start, 0, reserve) for n in (0, 1)},
    )  # fmt: skip


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[FakeProducer]:
    producers: list[FakeProducer] = []

    def producer(settings: Any, delivered: Any) -> FakeProducer:
        producers.append(FakeProducer(delivered))
        return producers[-1]

    monkeypatch.setattr(unit_module.clients, "producer", producer)
    return producers


def _unit(plan: UnitPlan, lease_ms: int = 60_000) -> unit_module.FlowUnit:
    lease = Lease()
    lease.grant(time.monotonic_ns(), lease_ms)
    unit = unit_module.FlowUnit(plan, lease, lambda: None)
    unit._consumer = FakeConsumer()  # type: ignore[assignment]
    with unit.lock:
        unit._apply(plan)
    return unit


def _records(partition: int, offsets: range, ts: int = 1_700_000_000_000) -> list[Message]:
    return [
        Message(topic="t", partition=partition, offset=o, value=f"{partition}-{o}".encode(),
                key=b"k", headers=[("h", b"1")], timestamp=(1, ts))
        for o in offsets
    ]  # fmt: skip


def _copy(unit: unit_module.FlowUnit, batch: list[Message]) -> None:
    with unit.lock:
        unit._copy(unit.desired, batch)
        unit._serve()


def _report(unit: unit_module.FlowUnit) -> dict[str, Any]:
    entry, _ = unit.report({}, set())
    return entry


def test_records_are_copied_in_order_with_key_headers_and_timestamp_and_counted(
    made: list[FakeProducer],
) -> None:
    unit = _unit(_plan())
    _copy(unit, _records(0, range(5)) + _records(1, range(3)))
    (producer,) = made
    sent = [(v, p) for _t, v, _k, p, *_ in producer.sent]
    for n, count in ((0, 5), (1, 3)):
        assert [v for v, p in sent if p == n] == [f"{n}-{o}".encode() for o in range(count)]
    topic, value, key, partition, _cb, _cb2, ts, headers = producer.sent[0]
    assert (topic, key, ts, headers) == (REMOTE, b"k", 1_700_000_000_000, [("h", b"1")])
    report = _report(unit)
    assert report["broken"] is None
    parts = {p["partition"]: p for p in report["partitions"]}
    assert parts[0]["records"] == 5 and parts[1]["records"] == 3
    assert (parts[0]["acked_up"], parts[0]["acked_down"], parts[0]["next_send"]) == (5, 5, 5)
    assert parts[0]["syncs"] == [[0, 0], [4, 4]]
    assert parts[0]["source_end"] == -1  # seen at most every 100 ms, not here


def test_the_first_copy_of_a_new_producer_is_acknowledged_before_more_is_sent(
    made: list[FakeProducer],
) -> None:
    unit = _unit(_plan())
    acked_when_second_sent = []
    original = FakeProducer.produce

    def produce(self: FakeProducer, topic: str, value: bytes, *rest: Any) -> None:
        if value == b"0-1":
            acked_when_second_sent.append(self.next_offset.get(0))
        original(self, topic, value, *rest)

    FakeProducer.produce = produce  # type: ignore[method-assign]
    try:
        _copy(unit, _records(0, range(3)))
    finally:
        FakeProducer.produce = original  # type: ignore[method-assign]
    assert acked_when_second_sent == [1], "offset 0 had landed before offset 1 was sent"


def test_the_first_copies_of_a_batchs_partitions_are_in_flight_together_and_each_acked_first(
    made: list[FakeProducer],
) -> None:
    """A cold start waits one acknowledgement round trip per batch, not one per partition;
    no partition gets a second copy before its first is acknowledged."""
    plan = UnitPlan(
        "primary->backup", 1, 0, {}, {}, None, None, "primary", "backup", 100,
        {("t", n): Wanted(1, REMOTE, 0, 0, 1000) for n in range(4)},
    )  # fmt: skip
    unit = _unit(plan)
    seen: list[tuple[bytes, int, int]] = []  # (value, records unacknowledged there, polls)
    original = FakeProducer.produce

    def produce(self: FakeProducer, topic: str, value: bytes, key: Any, partition: int,
                *rest: Any) -> None:  # fmt: skip
        unacked = sum(1 for m in self.pending if m[2] == partition)
        seen.append((value, unacked, self.polls))
        original(self, topic, value, key, partition, *rest)

    FakeProducer.produce = produce  # type: ignore[method-assign]
    try:
        _copy(unit, [m for o in range(3) for n in range(4) for m in _records(n, range(o, o + 1))])
    finally:
        FakeProducer.produce = original  # type: ignore[method-assign]
    firsts = [(v, polls) for v, _unacked, polls in seen if v.endswith(b"-0")]
    assert [v for v, _ in firsts] == [b"0-0", b"1-0", b"2-0", b"3-0"]
    assert {polls for _, polls in firsts} == {0}, "all four sent before any acknowledgement"
    seconds = [unacked for v, unacked, _ in seen if v.endswith(b"-1")]
    assert seconds == [0, 0, 0, 0], "a second copy waits for its partition's first's ack"
    report = {p["partition"]: p for p in _report(unit)["partitions"]}
    assert all(report[n]["records"] == 3 for n in range(4)), "the rest of the batch follows"


def test_an_acknowledgement_at_another_offset_breaks_the_unit_as_a_conflict(
    made: list[FakeProducer],
) -> None:
    unit = _unit(_plan())
    _copy(unit, _records(0, range(1)))
    made[0].landing[b"0-2"] = 7  # something else wrote offsets 2..6
    _copy(unit, _records(0, range(1, 5)))
    report = _report(unit)
    assert report["broken"]["kind"] == "conflict"
    assert (
        report["broken"]["offset"] == 2
        and "where offset 2 was planned" in (report["broken"]["message"])
    )
    part = next(p for p in report["partitions"] if p["partition"] == 0)
    assert part["state"] == "stopped" and part["uncertain"] is True
    assert unit._producer is None and made[0].purged, "the producer is purged and let go"


def test_a_record_the_target_refuses_breaks_the_unit_blaming_its_offset(
    made: list[FakeProducer],
) -> None:
    unit = _unit(_plan())
    _copy(unit, _records(0, range(1)))
    made[0].landing[b"0-1"] = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)
    _copy(unit, _records(0, range(1, 4)))
    broken = _report(unit)["broken"]
    assert (broken["kind"], broken["offset"], broken["class"]) == (
        "poison", 1, "MSG_SIZE_TOO_LARGE",
    )  # fmt: skip
    assert "refused a record whose value is 3 bytes" in broken["message"], "the size is named"
    assert unit._producer is None


def test_a_stopped_producer_is_purged_and_the_failed_records_report_names_the_cause(
    made: list[FakeProducer],
) -> None:
    unit = _unit(_plan())
    _copy(unit, _records(0, range(1)))
    producer = made[0]
    producer.fatal = KafkaError(
        KafkaError._GAPLESS_GUARANTEE, "... failed: Broker: Message size too large", fatal=True
    )
    producer.landing[b"0-1"] = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)
    with unit.lock:
        unit._copy(unit.desired, _records(0, range(1, 3)))
        unit._serve()  # raises the fatal error: purge, and the records' own reports
    broken = _report(unit)["broken"]
    assert broken["kind"] == "poison" and broken["offset"] == 1, broken


def test_nothing_is_sent_without_a_lease(made: list[FakeProducer]) -> None:
    unit = _unit(_plan())
    unit.lease.revoke()
    _copy(unit, _records(0, range(3)))
    assert not made[0].sent
    assert _report(unit)["broken"]["kind"] == "lease"


def test_a_partition_waits_at_its_reservation_and_goes_on_from_there_when_it_moves(
    made: list[FakeProducer],
) -> None:
    unit = _unit(_plan(reserve=3))
    consumer = unit._consumer
    _copy(unit, _records(0, range(6)))
    assert len(made[0].sent) == 3
    part = next(p for p in _report(unit)["partitions"] if p["partition"] == 0)
    assert (part["state"], part["next_send"]) == ("waiting_reservation", 3)
    assert ("t", 0) in consumer.paused  # type: ignore[union-attr]
    moved = _plan(reserve=10, version=2)
    with unit.lock:
        unit._apply(moved)
    unit.update(moved)
    assert ("t", 0, 3) in consumer.sought and ("t", 0) in consumer.resumed  # type: ignore[union-attr]
    _copy(unit, _records(0, range(2, 6)))  # refetched from the seek (2 was sent already)
    assert [v for _t, v, *_ in made[0].sent] == [f"0-{o}".encode() for o in range(6)]


def test_a_broken_unit_waits_for_a_later_epoch_then_starts_a_new_producer(
    made: list[FakeProducer],
) -> None:
    unit = _unit(_plan())
    unit.lease.revoke()
    _copy(unit, _records(0, range(1)))
    unit.lease.grant(time.monotonic_ns(), 60_000)
    with unit.lock:
        assert not unit._recovered(_plan(epoch=0)), "the same epoch: still broken"
        assert unit._recovered(_plan(epoch=1))
    assert _report(unit)["broken"] is None and _report(unit)["epoch"] == 1


def test_a_delta_report_lists_only_the_partitions_that_changed_since_one_taken_in(
    made: list[FakeProducer],
) -> None:
    unit = _unit(_plan())
    _copy(unit, _records(0, range(3)) + _records(1, range(2)))
    counts: dict[Any, int] = {}
    stopped: set[Any] = set()
    sent: dict[Any, dict[str, Any]] = {}
    entry, _ = unit.report(counts, stopped, sent, full=False)
    assert len(entry["partitions"]) == 2, "nothing taken in yet: both"
    again, _ = unit.report({}, set(), {}, full=False)
    assert len(again["partitions"]) == 2, "not confirmed (refused or lost): both again"
    unit.confirm(counts, stopped, sent)
    quiet, _ = unit.report({}, set(), {}, full=False)
    assert quiet["partitions"] == [] and quiet["lease_ms"] > 0, "unit fields always there"
    _copy(unit, _records(1, range(2, 4)))
    changed, _ = unit.report({}, set(), {}, full=False)
    assert [p["partition"] for p in changed["partitions"]] == [1]
    assert changed["partitions"][0]["syncs"] == [[3, 3]], "the syncs it carries"
    whole, _ = unit.report({}, set(), {}, full=True)
    assert len(whole["partitions"]) == 2


def test_new_client_settings_swap_the_producer_once_its_copies_landed_and_reassign(
    made: list[FakeProducer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver sized the clients for a topic's larger records: what the old producer
    sent lands first, then the next send goes through a new producer built from the new
    settings (establishing the partition again); a new consumer is assigned every
    partition at its next record to send."""
    consumers: list[FakeConsumer] = []

    def consumer(settings: Any) -> FakeConsumer:
        consumers.append(FakeConsumer())
        return consumers[-1]

    monkeypatch.setattr(unit_module.clients, "consumer", consumer)
    unit = _unit(_plan())
    first = unit._consumer
    with unit.lock:
        unit._copy(unit.desired, _records(0, range(3)))  # the last two still in flight
    (old,) = made
    assert len(old) == 2
    sized = replace(
        _plan(version=2),
        producer={"max.request.size": "22085632"},
        consumer={"max.partition.fetch.bytes": "22085632"},
    )
    unit.update(sized)
    with unit.lock:
        unit._follow_settings(sized)
        unit._apply(sized)
    assert len(old) == 0 and unit._producer is None, "acknowledged first, then let go"
    (new_consumer,) = consumers
    assert getattr(first, "closed", False) and unit._consumer is new_consumer
    assert new_consumer.assigned == [("t", 0, 3), ("t", 1, 0)]

    def producer(settings: Any, delivered: Any) -> FakeProducer:
        assert settings == {"max.request.size": "22085632"}
        made.append(FakeProducer(delivered))
        made[-1].next_offset = {0: 3}  # where the remote partition ends
        return made[-1]

    monkeypatch.setattr(unit_module.clients, "producer", producer)
    _copy(unit, _records(0, range(3, 5)))
    assert len(made) == 2 and [v for _t, v, *_ in made[1].sent] == [b"0-3", b"0-4"]
    parts = {p["partition"]: p for p in _report(unit)["partitions"]}
    assert parts[0]["acked_up"] == 5 and _report(unit)["broken"] is None
    with unit.lock:
        unit._follow_settings(sized)
    assert len(made) == 2 and len(consumers) == 1, "the same settings again change nothing"


# -- copies compressed with their source's codec (srm_driver.copier.producers) -----


@pytest.fixture
def by_codec(monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict[str, str], FakeProducer]]:
    producers: list[tuple[dict[str, str], FakeProducer]] = []

    def producer(settings: Any, delivered: Any) -> FakeProducer:
        producers.append((dict(settings), FakeProducer(delivered)))
        return producers[-1][1]

    monkeypatch.setattr(unit_module.clients, "producer", producer)
    return producers


def _codec_plan(codecs: dict[int, str], producer: dict[str, str] | None = None) -> UnitPlan:
    return UnitPlan(
        "primary->backup", 1, 0, {}, producer or {"acks": "all"}, None, None, "primary",
        "backup", 100, {("t", n): Wanted(1, REMOTE, 0, 0, 1000, c) for n, c in codecs.items()},
    )  # fmt: skip


def _codec_sent(producer: FakeProducer) -> list[tuple[int, bytes]]:
    return [(partition, value) for _t, value, _k, partition, *_ in producer.sent]


def test_each_partition_is_compressed_by_a_producer_of_its_codec(by_codec: list) -> None:
    unit = _unit(_codec_plan({0: "zstd", 1: "lz4"}))
    _copy(unit, _records(0, range(3)) + _records(1, range(2)))
    made = {settings["compression.type"]: producer for settings, producer in by_codec}
    assert sorted(made) == ["lz4", "zstd"]
    assert _codec_sent(made["zstd"]) == [(0, b"0-0"), (0, b"0-1"), (0, b"0-2")]
    assert _codec_sent(made["lz4"]) == [(1, b"1-0"), (1, b"1-1")]
    assert all(settings["acks"] == "all" for settings, _ in by_codec), "the forced keys stay"
    entry, _ = unit.report({}, set())
    assert entry["broken"] is None
    assert {p["partition"]: p["acked_up"] for p in entry["partitions"]} == {0: 3, 1: 2}


def test_a_configured_compression_type_is_kept_for_every_copy(by_codec: list) -> None:
    unit = _unit(_codec_plan({0: "zstd", 1: "lz4"}, {"compression.type": "gzip"}))
    _copy(unit, _records(0, range(2)) + _records(1, range(2)))
    ((settings, producer),) = by_codec
    assert settings["compression.type"] == "gzip" and len(producer.sent) == 4


def test_an_unknown_codec_leaves_the_producer_as_configured(by_codec: list) -> None:
    unit = _unit(_codec_plan({0: ""}))
    _copy(unit, _records(0, range(2)))
    ((settings, _producer),) = by_codec
    assert "compression.type" not in settings


def test_a_codec_found_later_moves_the_partition_once_its_copies_landed(by_codec: list) -> None:
    plan = _codec_plan({0: ""})
    unit = _unit(plan)
    _copy(unit, _records(0, range(3)))
    later = _codec_plan({0: "zstd"})
    with unit.lock:
        unit._apply(later)
    unit.update(later)
    acked_when_second_sent: list[int | None] = []
    original = FakeProducer.produce

    def produce(self: FakeProducer, topic: str, value: bytes, *rest: Any) -> None:
        if value == b"0-4":
            acked_when_second_sent.append(self.next_offset.get(0))
        original(self, topic, value, *rest)

    FakeProducer.produce = produce  # type: ignore[method-assign]
    try:
        with unit.lock:
            zstd = unit._producer_for(later).for_codec("zstd")
        zstd.next_offset[0] = 3  # type: ignore[attr-defined] # where the first one's ended
        _copy(unit, _records(0, range(3, 6)))
    finally:
        FakeProducer.produce = original  # type: ignore[method-assign]
    assert [s.get("compression.type") for s, _ in by_codec] == [None, "zstd"]
    assert _codec_sent(by_codec[1][1]) == [(0, b"0-3"), (0, b"0-4"), (0, b"0-5")]
    assert acked_when_second_sent == [4], "the new producer's first copy landed first"
    entry, _ = unit.report({}, set())
    assert entry["broken"] is None and entry["partitions"][0]["acked_up"] == 6


def test_a_codec_change_waits_while_copies_are_in_flight(by_codec: list) -> None:
    unit = _unit(_codec_plan({0: "lz4"}))
    p = unit._parts[("t", 0)]
    p.inflight.append((0, 0, 1, -1))
    p.change_codec("zstd")
    assert p.codec == "lz4", "in flight to the lz4 producer: not moved yet"
    p.inflight.clear()
    p.established = True
    p.change_codec("zstd")
    assert (p.codec, p.established) == ("zstd", False)


def test_a_codec_change_held_by_copies_in_flight_is_tried_again_with_the_same_plan(
    by_codec: list,
) -> None:
    """A plan is applied only when it changed; a codec change that had to wait for copies
    in flight leaves the plan unsettled, so the next pass tries it again unasked."""
    unit = _unit(_codec_plan({0: "lz4"}))
    p = unit._parts[("t", 0)]
    p.inflight.append((0, 0, 1, -1))
    later = _codec_plan({0: "zstd"})
    unit.update(later)
    with unit.lock:
        unit._follow(later)
    assert p.codec == "lz4", "in flight to the lz4 producer: not moved yet"
    p.inflight.clear()
    with unit.lock:
        unit._follow(later)
    assert p.codec == "zstd", "moved at the next pass, with no new answer"
    with unit.lock:
        unit._follow(later)
    assert not unit._unsettled


def test_the_answer_codec_is_optional() -> None:
    body = {
        "epoch": 0,
        "settings": {"consumer": {}, "producer": {}, "source": "a", "target": "b",
                     "poll_ms": 100},
        "partitions": [
            {"topic": "t", "partition": 0, "plan": 1, "remote": "a.t", "start": 0, "down": 0,
             "reserve": 10, "codec": "zstd"},
            {"topic": "t", "partition": 1, "plan": 2, "remote": "a.t", "start": 0, "down": 0,
             "reserve": 10},
        ],
    }  # fmt: skip
    plan = parse_plan("a->b", 1, body)
    assert plan.partitions[("t", 0)].codec == "zstd" and plan.partitions[("t", 1)].codec == ""


def test_a_plan_is_applied_once_and_again_only_while_a_partition_taken_away_settles(
    made: list[FakeProducer],
) -> None:
    """The loop walks the partitions when the plan changed, not at every poll; a partition
    taken away while a copy is in flight is dropped once that copy is acknowledged and the
    driver saw it stopped, with no new answer needed."""
    unit = _unit(_plan())
    consumer = unit._consumer
    assert isinstance(consumer, FakeConsumer)
    walked: list[int] = []
    apply = unit._apply

    def counting(plan: UnitPlan) -> None:
        walked.append(plan.version)
        apply(plan)

    unit._apply = counting  # type: ignore[method-assign]
    plan = unit.desired
    with unit.lock:
        unit._follow(plan)
    assert walked == [], "the plan applied already: no walk"
    with unit.lock:
        unit._copy(plan, _records(1, range(1)))  # partition 1's copy in flight, unacked
    smaller = UnitPlan(
        plan.flow, 2, 0, {}, {}, None, None, "primary", "backup", 100,
        {("t", 0): plan.partitions[("t", 0)]},
    )  # fmt: skip
    unit.update(smaller)
    with unit.lock:
        unit._follow(smaller)
        unit._follow(smaller)
    assert walked == [2, 2], "walked again while partition 1 still had a copy in flight"
    assert ("t", 1) in unit._parts
    with unit.lock:
        unit._serve()  # its copy is acknowledged: stopped
    stopped: set[Any] = set()
    unit.report({}, stopped)
    unit.confirm({}, stopped)  # the driver saw it stopped
    with unit.lock:
        unit._follow(smaller)
        unit._follow(smaller)
    assert walked == [2, 2, 2], "settled: no more walks"
    assert ("t", 1) not in unit._parts
    assert [tp[:2] for tp in consumer.assigned] == [("t", 0)]
    same = UnitPlan(
        plan.flow, 3, 0, {}, {}, None, None, "primary", "backup", 100, smaller.partitions
    )
    with unit.lock:
        unit._follow(same)
    assert walked[-1] == 3 and unit._applied_version == 3, "a new answer's version is applied"


def test_new_consumer_settings_with_the_same_plans_assign_the_new_consumer(
    made: list[FakeProducer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer that changes only the clients' settings keeps the same partitions mapping
    (nothing to walk for the plans), yet the new consumer is assigned every partition."""
    consumers: list[FakeConsumer] = []

    def consumer(settings: Any) -> FakeConsumer:
        consumers.append(FakeConsumer())
        return consumers[-1]

    monkeypatch.setattr(unit_module.clients, "consumer", consumer)
    unit = _unit(_plan())
    _copy(unit, _records(0, range(2)))
    sized = replace(unit.desired, version=2, consumer={"max.partition.fetch.bytes": "22085632"})
    assert sized.partitions is unit.desired.partitions
    unit.update(sized)
    with unit.lock:
        unit._follow_settings(sized)
        unit._follow(sized)
    (new_consumer,) = consumers
    assert unit._consumer is new_consumer
    assert new_consumer.assigned == [("t", 0, 2), ("t", 1, 0)]


def _partitions(n: int, start: int = 0) -> dict[tuple[str, int], Wanted]:
    return {("t", p): Wanted(1, REMOTE, start, 0, 1000) for p in range(n)}


def test_new_and_removed_partitions_change_only_themselves_in_the_consumers_assignment(
    made: list[FakeProducer],
) -> None:
    """A cold start hands a slot its partitions in batches: each batch is added to the
    consumer's assignment (at its next record to send) and a partition taken away is
    removed, while the others keep their fetch positions; assigning the whole set again
    each time cost ~0.3 s of CPU at 2,500 partitions and fetched them all again."""
    first = replace(_plan(), partitions=_partitions(3))
    unit = _unit(first)
    consumer = unit._consumer
    assert isinstance(consumer, FakeConsumer)
    assert consumer.whole == 0 and len(consumer.assigned) == 3
    _copy(unit, _records(0, range(5)))  # partition 0 has sent 0..4; fetched past them
    more = replace(
        first, version=2, partitions={**first.partitions, ("t", 3): Wanted(2, REMOTE, 7, 0, 1000)}
    )
    with unit.lock:
        unit._follow(more)
    assert consumer.whole == 0, "no whole assign for a partition added"
    assert consumer.assigned == [("t", 0, 0), ("t", 1, 0), ("t", 2, 0), ("t", 3, 7)]
    assert ("t", 3) in consumer.resumed, "a new partition sends (a pause outlives assign)"
    fewer = replace(
        more, version=3, partitions={k: v for k, v in more.partitions.items() if k != ("t", 1)}
    )
    with unit.lock:
        unit._follow(fewer)
    stopped: set[Any] = set()
    unit.report({}, stopped)
    unit.confirm({}, stopped)  # the driver saw partition 1 stopped
    with unit.lock:
        unit._follow(fewer)
    assert consumer.whole == 0
    assert [a[:2] for a in consumer.assigned] == [("t", 0), ("t", 2), ("t", 3)]


def test_an_assignment_change_librdkafka_refuses_assigns_everything_again(
    made: list[FakeProducer],
) -> None:
    unit = _unit(replace(_plan(), partitions=_partitions(2)))
    consumer = unit._consumer
    assert isinstance(consumer, FakeConsumer)
    _copy(unit, _records(0, range(3)))
    consumer.assigned.append(("t", 2, 0))  # librdkafka holds it already: a conflict
    more = replace(unit.desired, version=2, partitions=_partitions(3))
    with unit.lock:
        unit._follow(more)
    assert consumer.whole == 1, "assigned again whole"
    assert consumer.assigned == [("t", 0, 3), ("t", 1, 0), ("t", 2, 0)]


class CountingConsumer(FakeConsumer):
    def __init__(self) -> None:
        super().__init__()
        self.ends_read: list[tuple[str, int]] = []

    def get_watermark_offsets(self, tp: Any, cached: bool = False) -> tuple[int, int]:
        self.ends_read.append((tp.topic, tp.partition))
        return (0, 42)


def test_source_ends_are_read_a_bounded_number_of_partitions_at_a_time_in_turn(
    made: list[FakeProducer],
) -> None:
    """Reading every partition's end at every look (ten a second) cost ~38 ms at 2,500
    partitions; each look reads at most _ENDS_PER_LOOK, in turn, so every end is seen."""
    count = assignment._ENDS_PER_LOOK * 2 + 50
    unit = unit_module.FlowUnit(
        replace(_plan(), partitions=_partitions(count)), Lease(), lambda: None
    )
    consumer = CountingConsumer()
    unit._consumer = consumer  # type: ignore[assignment]
    with unit.lock:
        unit._apply(unit.desired)
    looks = []
    for _ in range(3):
        unit._held.ends_seen_ns = 0  # the look is due
        consumer.ends_read.clear()
        unit._see_ends()
        looks.append(list(consumer.ends_read))
    assert [len(look) for look in looks] == [assignment._ENDS_PER_LOOK] * 3
    seen = {tp for look in looks for tp in look}
    assert seen == {("t", p) for p in range(count)}, "every partition's end in three looks"
    assert all(p.source_end == 42 for p in unit._parts.values())
    added = replace(unit.desired, version=2, partitions=_partitions(count + 1))
    with unit.lock:
        unit._apply(added)
    for _ in range(3):
        unit._held.ends_seen_ns = 0
        unit._see_ends()
    assert unit._parts[("t", count)].source_end == 42, "a partition added is read in turn"


def test_while_first_copies_wait_for_their_acknowledgements_the_slot_still_reports(
    made: list[FakeProducer],
) -> None:
    """The loop lets its lock go between polls while first copies are acknowledged: on a
    busy target that took tens of seconds at a cold start, and a slot whose control
    thread cannot take the lock stops reporting and is taken for lost."""
    unit = _unit(_plan())
    acks = threading.Event()
    original = FakeProducer.poll

    def poll(self: FakeProducer, timeout: float = 0) -> int:
        if not acks.is_set():  # the target does not answer yet
            time.sleep(min(timeout, 0.001))
            return 0
        return original(self, timeout)

    FakeProducer.poll = poll  # type: ignore[method-assign]
    try:
        batch = _records(0, range(3)) + _records(1, range(3))
        copying = threading.Thread(target=_copy, args=(unit, batch), daemon=True)
        copying.start()
        deadline = time.monotonic() + 5
        while not (made and made[0].sent) and time.monotonic() < deadline:
            time.sleep(0.005)
        assert [m[1] for m in made[0].sent] == [b"0-0", b"1-0"], "first copies in flight"
        taken = unit.lock.acquire(timeout=2)  # what the control thread's report does
        assert taken, "the loop held its lock while waiting for acknowledgements"
        unit.lock.release()
        assert copying.is_alive(), "still waiting for the first copies"
        acks.set()
        copying.join(5)
        assert not copying.is_alive()
    finally:
        FakeProducer.poll = original  # type: ignore[method-assign]
    report = {p["partition"]: p for p in _report(unit)["partitions"]}
    assert report[0]["records"] == 3 and report[1]["records"] == 3


def _settled(count: int) -> unit_module.FlowUnit:
    """A unit of ``count`` idle partitions whose whole report the driver took in."""
    unit = _unit(replace(_plan(), partitions=_partitions(count)))
    with unit.lock:
        for p in unit._parts.values():
            p.source_end = 42  # as the fake consumer's fetches say: the ends were seen
    counts: dict[Any, int] = {}
    stopped: set[Any] = set()
    sent: dict[Any, dict[str, Any]] = {}
    unit.report(counts, stopped, sent, full=True)
    unit.confirm(counts, stopped, sent)
    unit.report({}, set(), {}, full=False)  # the partitions added are looked at once
    return unit


def _looked_at(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The partitions whose report entry is built from now on, in order."""
    looked: list[tuple[str, int]] = []
    build = PartitionCopy.report

    def counting(self: PartitionCopy, boundary: bool) -> dict[str, Any]:
        looked.append((self.topic, self.partition))
        return build(self, boundary)

    monkeypatch.setattr(PartitionCopy, "report", counting)
    return looked


@pytest.mark.parametrize("count", [10, 10_000])
def test_a_delta_report_looks_only_at_the_partitions_that_changed(
    made: list[FakeProducer], monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """Five reports a second: a slot of 10,000 idle partitions looks at none of them (it
    built every entry to compare it, ~2,500 dicts a report per slot); one that copied is
    looked at, and the same work is done whatever the count."""
    unit = _settled(count)
    looked = _looked_at(monkeypatch)
    quiet, _ = unit.report({}, set(), {}, full=False)
    assert quiet["partitions"] == [] and looked == []
    with unit.lock:
        unit._held.ends_seen_ns = 0
        unit._see_ends()  # the same ends as before: nothing changed
    unit.report({}, set(), {}, full=False)
    assert looked == []
    with unit.lock:
        unit._parts[("t", 7)].stop()
    stopping, _ = unit.report({}, set(), {}, full=False)
    assert [(p["partition"], p["state"]) for p in stopping["partitions"]] == [(7, "stopped")]
    looked.clear()
    _copy(unit, _records(5, range(3)))
    changed, _ = unit.report({}, set(), {}, full=False)
    assert [p["partition"] for p in changed["partitions"]] == [7, 5], "7: not confirmed"
    assert looked == [("t", 7), ("t", 5)]
    whole, _ = unit.report({}, set(), {}, full=True)
    assert len(whole["partitions"]) == count, "a full report still lists every partition"


def test_a_partition_acknowledged_after_a_report_is_listed_by_the_next(
    made: list[FakeProducer],
) -> None:
    """Acknowledgements do not mark a partition changed (they come once per copy): one
    with copies in flight stays looked at until a report finds it settled."""
    unit = _settled(3)
    _copy(unit, _records(1, range(1)))  # established: the next copies need no wait
    with unit.lock:
        unit._copy(unit.desired, _records(1, range(1, 4)))  # in flight, not acknowledged
    counts: dict[Any, int] = {}
    stopped: set[Any] = set()
    sent: dict[Any, dict[str, Any]] = {}
    flying, _ = unit.report(counts, stopped, sent, full=False)
    assert [(p["partition"], p["outstanding"]) for p in flying["partitions"]] == [(1, 3)]
    unit.confirm(counts, stopped, sent)
    same, _ = unit.report({}, set(), {}, full=False)
    assert same["partitions"] == [], "the driver has this entry; its copies are in flight"
    with unit.lock:
        unit._serve()  # the acknowledgements land
    landed, _ = unit.report({}, set(), {}, full=False)
    assert [(p["partition"], p["outstanding"], p["records"]) for p in landed["partitions"]] == [
        (1, 0, 4)
    ]


def _shared(partitions: int = 2) -> UnitPlan:
    """A plan into a shared (identity policy) target: origin rule and copy header."""
    return replace(_plan(), origin_header="srm-origin", copy_header="srm-copy")


def test_a_copy_into_a_shared_target_is_stamped_and_one_from_the_target_dropped(
    made: list[FakeProducer],
) -> None:
    unit = _unit(_shared())
    looped = Message(topic="t", partition=0, offset=1, value=b"x", key=b"k",
                     headers=[("srm-origin", b"backup")], timestamp=(1, 1))  # fmt: skip
    _copy(unit, [*_records(0, range(1)), looped, *_records(0, range(2, 3))])
    sent = made[0].sent
    assert [m[1] for m in sent] == [b"0-0", b"0-2"], "the record from the target is dropped"
    assert sent[0][7] == [("h", b"1"), ("srm-origin", b"primary"), ("srm-copy", b"primary/0")]
    assert _report(unit)["partitions"][0]["dropped"] == 1


def test_a_malformed_origin_header_or_an_offset_out_of_range_stops_that_partition_alone(
    made: list[FakeProducer],
) -> None:
    unit = _unit(_shared())
    bad = Message(topic="t", partition=0, offset=0, value=b"x", key=b"k",
                  headers=[("srm-origin", b"")], timestamp=(1, 1))  # fmt: skip
    _copy(unit, [bad])
    gone = Message(topic="t", partition=1, offset=5,
                   error=KafkaError(KafkaError.OFFSET_OUT_OF_RANGE))  # fmt: skip
    _copy(unit, [gone])
    parts = {p["partition"]: p for p in _report(unit)["partitions"]}
    assert parts[0]["state"] == "stopped" and parts[0]["error"]["kind"] == "poison"
    assert parts[0]["error"]["class"] == "MalformedOriginException"
    assert parts[1]["state"] == "stopped" and parts[1]["error"]["kind"] == "out_of_range"
    assert set(unit._consumer.paused) >= {("t", 0), ("t", 1)}  # type: ignore[union-attr]
    assert _report(unit)["broken"] is None, "the unit goes on"
