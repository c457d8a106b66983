"""The batch copy's unit (:class:`BatchUnit`) through its loop's steps, on fakes of the
wire layer: a source broker that answers every Fetch with its whole log, and target
brokers that append each Produce's batches to one shared log (as a cluster's replicas
would) and answer at once or when told. What is under test is the unit's own rules:
which batch goes where, how answers are matched to what was sent, and what a failure
says."""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Callable, Sequence
from types import SimpleNamespace

import pytest
from srm_driver.copier import batch_unit
from srm_driver.copier.batch_clients import Sent
from srm_driver.copier.batch_rules import Batch
from srm_driver.copier.batch_unit import BatchUnit
from srm_driver.copier.lease import Lease
from srm_driver.copier.plan import UnitPlan, parse_plan
from srm_driver.copier.wire.apis import Api
from srm_driver.copier.wire.batches import crc32c
from srm_driver.copier.wire.errors import BrokerError, WireError
from srm_driver.copier.wire.primitives import Reader, Writer
from srm_driver.copier.wire.pump import Pump
from srm_driver.testing import TS, produce_answer, record_batch

REMOTE = ("primary.t", 0)
_COUNT_AT = 57  # a v2 batch header's record count


def _count(batch: bytes | memoryview) -> tuple[int]:
    return struct.unpack_from(">i", batch, _COUNT_AT)  # type: ignore[return-value]


class _Source:
    """A source broker: every Fetch is answered at once with each partition's whole log
    (the unit skips what it copied already)."""

    broker = "source:9092"
    broken = False
    write_by = None

    def __init__(self) -> None:
        self.log: dict[tuple[str, int], list[bytes]] = {}
        self.errors: dict[tuple[str, int], int] = {}  # partitions answered with an error
        self.asked: list[tuple[str, int, int]] = []  # (topic, partition, offset) fetched

    def send(self, api: Api, body: Sequence[bytes]) -> int:
        reader = Reader(memoryview(b"".join(body)))
        reader.int32(), reader.int32(), reader.int32(), reader.int32()  # replica, wait, sizes
        reader.int8(), reader.int32(), reader.int32()  # isolation, no fetch session
        for _ in range(reader.array()):
            topic = reader.string()
            for _ in range(reader.array()):
                partition, _epoch, offset = reader.int32(), reader.int32(), reader.int64()
                reader.int64(), reader.int32()
                self.asked.append((topic, partition, offset))
        return len(self.asked)

    def answer(self, correlation: int) -> memoryview:
        answered = {**dict.fromkeys(self.errors, [record_batch(0, 1)]), **self.log}
        writer = Writer().int32(0).int16(0).int32(0).array(len(answered))
        for (topic, partition), batches in answered.items():
            (base,), (count,) = struct.unpack_from(">q", batches[-1]), _count(batches[-1])
            end = base + count
            error = self.errors.get((topic, partition), 0)
            records = b"" if error else b"".join(batches)
            writer.string(topic).array(1).int32(partition).int16(error)
            writer.int64(end).int64(end).int64(0).array(0).int32(-1).int32(len(records))
            writer.buffer += records
        return memoryview(bytes(writer.buffer))


class _Target:
    """A target broker: each Produce's batches are appended to the cluster's ``log`` (next
    offset per remote partition); the answer is handed out at once, or once
    :meth:`release` is called while ``hold`` is set."""

    broken = False
    write_by = None

    def __init__(self, broker: str, log: dict[tuple[str, int], int]) -> None:
        self.broker, self.log = broker, log
        self.hold = False
        self.refuse: Exception | None = None  # raised by the next send
        self.produced: list[list[tuple[str, int, int, int]]] = []  # (topic, partition, base, count)
        self.in_flight = self.most_in_flight = 0
        self._answers: dict[int, memoryview] = {}
        self._held: dict[int, memoryview] = {}

    def send(self, api: Api, body: Sequence[bytes]) -> int:
        if self.refuse is not None:
            raise self.refuse
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        reader = Reader(memoryview(b"".join(bytes(part) for part in body)))
        reader.nullable_string(), reader.int16(), reader.int32()
        landed = []
        for _ in range(reader.array()):
            topic = reader.string()
            for _ in range(reader.array()):
                partition, records = reader.int32(), reader.nullable_bytes()
                assert records is not None
                (count,) = _count(records)
                base = self.log.get((topic, partition), 0)
                self.log[(topic, partition)] = base + count
                landed.append((topic, partition, base, count))
        self.produced.append(landed)
        answer = produce_answer(
            *[(topic, partition, 0, base) for topic, partition, base, _ in landed]
        )
        correlation = len(self.produced)
        (self._held if self.hold else self._answers)[correlation] = answer
        return correlation

    def release(self) -> None:
        self._answers.update(self._held)
        self._held.clear()

    def answer(self, correlation: int) -> memoryview | None:
        found = self._answers.pop(correlation, None)
        self.in_flight -= found is not None
        return found


class _Cluster:
    """A cluster of fake brokers: ``leaders`` says who leads each partition, as its
    metadata does (``moves`` are applied by the next refresh). A leader's connection is
    opened by :meth:`leader` (``connecting`` runs first: a slow broker would block there)
    and only then handed out by :meth:`open_leader`."""

    timeout = 5.0
    broken = False

    def __init__(self, leaders: dict[tuple[str, int], object]) -> None:
        self.leaders = leaders
        self.moves: dict[tuple[str, int], object] = {}
        self.opened: list[object] = []
        self.connecting: Callable[[], None] = lambda: None
        self.metadata = SimpleNamespace(topics={})
        self.closed = False
        self.refreshes = 0

    def refresh(self, topics: Sequence[str]) -> None:
        self.refreshes += 1
        self.metadata.topics.update(dict.fromkeys(topics, (0, {})))
        self.leaders.update(self.moves)
        self.moves = {}

    def leader_known(self, topic: str, partition: int) -> bool:
        return topic in self.metadata.topics and (topic, partition) in self.leaders

    def leader(self, topic: str, partition: int) -> object:
        if (topic, partition) not in self.leaders:
            raise BrokerError("(metadata)", "Metadata", 3, f"of {topic}-{partition}")
        found = self.leaders[(topic, partition)]
        if not any(known is found for known in self.opened):
            self.connecting()
            self.opened.append(found)
        return found

    def open_leader(self, topic: str, partition: int) -> object | None:
        found = self.leaders[(topic, partition)]
        return found if any(known is found for known in self.opened) else None

    def init_producer_id(self) -> tuple[int, int]:
        return 7, 0

    def close(self) -> None:
        self.closed = True


def _plan(
    topics: str = "t",
    version: int = 1,
    *,
    start: int = 0,
    reserve: int = 10**9,
    partitions: Sequence[int] = (0,),
    **producer: str,
) -> UnitPlan:
    settings = {"consumer": {"bootstrap.servers": "source:9092"},
                "producer": {"bootstrap.servers": "target:9092", **producer}, "source": "primary",
                "target": "backup", "poll_ms": 100, "batches": {"window": 1000}}  # fmt: skip
    partitions = [{"topic": topic, "partition": partition, "plan": 1, "remote": f"primary.{topic}",
                   "start": start, "down": 0, "reserve": reserve}
                  for topic in topics for partition in partitions]  # fmt: skip
    body = {"epoch": 1, "settings": settings, "partitions": partitions}
    return parse_plan("f", version, body)


def _unit(source: _Cluster, target: _Cluster, plan: UnitPlan | None = None) -> BatchUnit:
    def connect(settings: dict[str, str], pump: Pump, timeout: float) -> _Cluster:
        return source if settings["bootstrap.servers"] == "source:9092" else target

    lease = Lease()
    lease.grant(time.monotonic_ns(), 60_000)
    unit = BatchUnit(plan or _plan(), lease, lambda: None, connect=connect)  # type: ignore[arg-type]
    unit._open()
    return unit


def _turn(unit: BatchUnit, plan: UnitPlan) -> None:
    """One turn of the unit's loop (FlowUnit._loop)."""
    assert unit._ready(plan)
    fetched = unit._poll(plan)
    with unit.lock:
        if fetched:
            unit._copy(plan, fetched)
        unit._serve()


def test_a_target_leader_that_moves_under_batches_in_flight_waits_for_their_answers() -> None:
    """Batches of one partition in flight to its old leader, and the next one sent to the
    new leader, whose answer came first: it was matched against the old leader's oldest
    batch, and a false "conflict" halted the partition. The next batch now waits for
    the old leader's answers, then goes to the new one."""
    source = _Source()
    source.log[("t", 0)] = [record_batch(0, 10), record_batch(10, 10)]
    log: dict[tuple[str, int], int] = {}
    old, new = _Target("a:9092", log), _Target("b:9092", log)
    target = _Cluster({REMOTE: old})
    unit, plan = _unit(_Cluster({("t", 0): source, ("u", 0): source}), target), _plan()
    _turn(unit, plan)  # the new producer's first batch, acknowledged before more go
    p = unit._parts[("t", 0)]
    assert (p.established, p.records) == (True, 10)
    old.hold = True
    _turn(unit, plan)  # 10..19 in flight to the old leader, its answer late
    assert p.outstanding == 1
    source.log[("t", 0)].append(record_batch(20, 10))
    # A new remote topic: the target's metadata is looked up again, and says that
    # primary.t-0's leader moved.
    target.moves[REMOTE] = new
    target.leaders[("primary.u", 0)] = old
    plan = _plan("tu", version=2)
    _turn(unit, plan)
    assert unit._failure is None
    assert new.produced == [] and p.outstanding == 1  # 20..29 waits
    asked = len(source.asked)
    _turn(unit, plan)  # and is not fetched again meanwhile
    assert [key for *key, _ in source.asked[asked:]] == [["u", 0]]
    assert (new.produced, unit._failure) == ([], None)
    old.release()
    _turn(unit, plan)  # the old leader's answer lands
    _turn(unit, plan)  # 20..29 to the new leader
    assert unit._failure is None
    assert new.produced == [[("primary.t", 0, 20, 10)]]
    assert (p.records, p.outstanding, p.prev_down, log[REMOTE]) == (30, 0, 29, 30)


def test_an_answer_that_overtakes_an_older_batch_of_its_partition_is_no_conflict() -> None:
    """Should a partition's batches be in flight to two brokers, the later one's answer
    cannot be checked against the plan before the older one's: the unit breaks as for
    any target failure (a new plan), never as for another writer (a halt)."""
    log: dict[tuple[str, int], int] = {}
    old, new = _Target("a:9092", log), _Target("b:9092", log)
    unit, plan = _unit(_Cluster({}), _Cluster({REMOTE: old})), _plan()
    assert unit._ready(plan)
    p = unit._parts[("t", 0)]
    p.sent_batch(0, 9, 10, 1_000, TS)
    p.sent_batch(10, 19, 10, 1_000, TS)
    first, second = (Batch.read(memoryview(record_batch(at, 10))) for at in (0, 10))
    later = Sent(new, 1, 0, {REMOTE: (p, second)})  # type: ignore[arg-type]
    unit._sent.extend([Sent(old, 1, 0, {REMOTE: (p, first)}), later])  # type: ignore[arg-type]
    unit._landed(later, produce_answer(("primary.t", 0, 0, 10)), TS)
    failure = unit._failure
    assert failure is not None and failure["kind"] == "transient"
    assert failure["message"].startswith(
        "broker b:9092: Produce to primary.t-0 answered before an older batch sent to another"
    )
    assert p.records == 0 and not unit._sent


class _Refusing(_Cluster):
    """A target that cannot be reached, or refuses this producer an id."""

    def __init__(self, error: Exception, at: str) -> None:
        super().__init__({REMOTE: _Target("b:9092", {})})
        self.error, self.at = error, at

    def refresh(self, topics: Sequence[str]) -> None:
        if self.at == "refresh":
            raise self.error

    def init_producer_id(self) -> tuple[int, int]:
        raise self.error


_REACH = "; check that this slot reaches its brokers (backup.bootstrap.servers) over the network"
_ACLS = (
    "; check that this slot's principal may write the remote topics (Write) and produce"
    " idempotently (IdempotentWrite)"
)


@pytest.mark.parametrize(
    ("error", "at", "check"),
    [
        (
            WireError("no bootstrap server answered: broker b:9092: cannot connect"),
            "refresh",
            _REACH,
        ),
        (BrokerError("b:9092", "InitProducerId", 31), "init_producer_id", _ACLS),
        (BrokerError("b:9092", "Metadata", 29, "of primary.t"), "refresh", _ACLS),
        (BrokerError("b:9092", "Metadata", 5, "of primary.t"), "refresh", ""),
        (
            BrokerError("b:9092", "SaslAuthenticate as srm", 58),
            "refresh",
            "; check the user name and password of backup.sasl.jaas.config (and"
            " backup.sasl.mechanism) against the users the cluster knows",
        ),
    ],
    ids=[
        "unreachable",
        "no-idempotent-write",
        "no-topic-access",
        "other-broker-error",
        "login-refused",
    ],  # fmt: skip
)
def test_a_target_that_fails_before_anything_is_sent_is_named_as_the_target(
    error: Exception, at: str, check: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Named as the target, with what to check: the way to its brokers when none
    answered, its ACLs when a broker refused an authorization, nothing more when a
    broker answered with another error."""
    monkeypatch.setattr(batch_unit.time, "sleep", lambda _s: None)
    source, target = _Cluster({}), _Refusing(error, at)
    unit, plan = _unit(source, target), _plan()
    _turn(unit, plan)
    assert unit._poll_error == f"writing to target cluster 'backup': {error}{check}"
    assert not source.closed and target.closed  # the source is not the one started over
    assert unit._failure is None


def test_a_source_that_refuses_the_slots_login_says_what_to_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(batch_unit.time, "sleep", lambda _s: None)
    refused = BrokerError("a:9092", "SaslAuthenticate as srm", 58)
    source, target = _Refusing(refused, "refresh"), _Cluster({REMOTE: _Target("b:9092", {})})
    unit, plan = _unit(source, target), _plan()
    _turn(unit, plan)
    assert unit._poll_error == (
        f"reading primary: {refused}; check the user name and password of"
        " primary.sasl.jaas.config (and primary.sasl.mechanism) against the users the cluster"
        " knows"
    )


def test_a_source_connection_that_breaks_while_the_target_is_looked_up_is_the_sources() -> None:
    """The pump serves the source's connections while the target's metadata is waited
    for, so a source that breaks then fails the target's refresh: it is the source that
    is named and started over, and the target's producer is kept."""
    source = _Source()
    source.log[("t", 0)] = [record_batch(0, 10)]
    sources = _Cluster({("t", 0): source, ("u", 0): source})
    target = _Cluster({REMOTE: _Target("b:9092", {}), ("primary.u", 0): _Target("c:9092", {})})
    unit, plan = _unit(sources, target), _plan()
    _turn(unit, plan)
    producer = unit._clients.producer
    lost = WireError("broker source:9092: the broker closed the connection")

    def refresh(_topics: Sequence[str]) -> None:
        sources.broken = True
        raise lost

    target.refresh = refresh  # type: ignore[method-assign]
    plan = _plan("tu", version=2)  # a new remote topic: the target is looked up again
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch_unit.time, "sleep", lambda _s: None)
        _turn(unit, plan)
    assert unit._poll_error == f"reading primary: {lost}"
    assert sources.closed and unit._clients.source is None
    assert not target.closed and unit._clients.producer == producer
    assert unit._failure is None


def test_a_partition_added_to_a_remote_topic_has_its_leader_looked_up() -> None:
    """The remote topic is known, its new partition is not: the target's metadata is
    looked up again (not a "Metadata error 3" that stops every partition of the unit)."""
    source = _Source()
    source.log[("t", 0)], source.log[("t", 1)] = [record_batch(0, 10)], [record_batch(0, 5)]
    sources = _Cluster({("t", 0): source, ("t", 1): source})
    leader = _Target("b:9092", {})
    target = _Cluster({REMOTE: leader})
    unit = _unit(sources, target)
    _turn(unit, _plan())
    target.moves[("primary.t", 1)] = leader  # the partition the next refresh names
    plan = _plan(version=2, partitions=(0, 1))
    _turn(unit, plan)
    assert (unit._poll_error, unit._failure) == (None, None)
    assert leader.produced[-1] == [("primary.t", 1, 0, 5)]
    assert unit._parts[("t", 1)].records == 5


def test_a_partition_added_to_a_source_topic_has_its_leader_looked_up() -> None:
    """The source topic is known, its new partition is not: the source's metadata is
    looked up again before the Fetch (not a "Metadata error 3" said as a read failure)."""
    source = _Source()
    source.log[("t", 0)], source.log[("t", 1)] = [record_batch(0, 10)], [record_batch(0, 5)]
    sources = _Cluster({("t", 0): source})
    leader = _Target("b:9092", {})
    target = _Cluster({REMOTE: leader, ("primary.t", 1): leader})
    unit = _unit(sources, target)
    _turn(unit, _plan())
    sources.moves[("t", 1)] = source  # the partition the next refresh names
    _turn(unit, _plan(version=2, partitions=(0, 1)))
    assert (unit._poll_error, unit._failure) == (None, None)
    assert sources.refreshes == 2
    assert leader.produced[-1] == [("primary.t", 1, 0, 5)]


def test_a_target_connection_lost_with_batches_in_flight_breaks_the_unit_naming_the_target() -> (
    None
):
    source = _Source()
    source.log[("t", 0)] = [record_batch(0, 10)]
    broken = _Target("b:9092", {})
    broken.hold = True
    unit, plan = _unit(_Cluster({("t", 0): source}), _Cluster({REMOTE: broken})), _plan()
    _turn(unit, plan)

    def lost(_correlation: int) -> None:
        raise WireError("broker b:9092: the broker closed the connection")

    broken.answer = lost  # type: ignore[method-assign]
    with unit.lock:
        unit._serve()
    failure = unit._failure
    assert failure is not None and failure["kind"] == "transient"
    assert failure["message"] == (
        "writing to target cluster 'backup': broker b:9092: the broker closed the connection"
        + _REACH
    )


def test_a_slow_target_broker_does_not_hold_the_units_lock_while_it_is_connected() -> None:
    """The leader of a remote partition is connected before the lock is taken: the
    control thread's reports go on while a broker takes its time to answer."""
    source = _Source()
    source.log[("t", 0)] = [record_batch(0, 10)]
    leader = _Target("b:9092", {})
    target = _Cluster({REMOTE: leader})
    connecting, slow = threading.Event(), threading.Event()

    def slow_broker() -> None:
        connecting.set()
        slow.wait(10)

    target.connecting = slow_broker
    unit, plan = _unit(_Cluster({("t", 0): source}), target), _plan()
    loop = threading.Thread(target=_turn, args=(unit, plan))
    loop.start()
    try:
        assert connecting.wait(5)
        reported = threading.Thread(target=unit.report, args=({}, set()))
        reported.start()
        reported.join(2)
        assert not reported.is_alive(), "a report waited for the target's broker"
    finally:
        slow.set()
        loop.join(5)
    assert leader.produced == [[("primary.t", 0, 0, 10)]] and unit._failure is None


# -- what a fetch's answer becomes (_copy_fetched), and how it is sent (_send) -------------


def _one_partition(
    *batches: bytes, plan: UnitPlan | None = None
) -> tuple[BatchUnit, UnitPlan, _Source, _Target]:
    source = _Source()
    if batches:
        source.log[("t", 0)] = list(batches)
    leader, plan = _Target("b:9092", {}), plan or _plan()
    unit = _unit(_Cluster({("t", 0): source}), _Cluster({REMOTE: leader}), plan)
    return unit, plan, source, leader


def test_each_round_carries_one_batch_per_partition_and_partitions_share_a_request() -> None:
    source = _Source()
    source.log[("t", 0)], source.log[("u", 0)] = [record_batch(0, 10)], [record_batch(0, 5)]
    leader = _Target("b:9092", {})
    target = _Cluster({REMOTE: leader, ("primary.u", 0): leader})
    plan = _plan("tu")
    unit = _unit(_Cluster({("t", 0): source, ("u", 0): source}), target, plan)
    _turn(unit, plan)  # each partition's first batch (one request), acknowledged first
    source.log[("t", 0)] += [record_batch(10, 10), record_batch(20, 10)]
    source.log[("u", 0)] += [record_batch(5, 5)]
    _turn(unit, plan)  # what was copied is skipped; the rest goes in rounds
    assert leader.produced == [
        [("primary.t", 0, 0, 10), ("primary.u", 0, 0, 5)],
        [("primary.t", 0, 10, 10), ("primary.u", 0, 5, 5)],
        [("primary.t", 0, 20, 10)],
    ]
    t, u = unit._parts[("t", 0)], unit._parts[("u", 0)]
    assert (t.records, t.prev_down, u.records, u.prev_down) == (30, 29, 10, 9)
    assert (t.syncs, u.syncs, unit._failure) == ([(0, 0)], [(0, 0)], None)


def test_a_batch_that_would_end_past_the_reservation_waits_at_its_first_offset() -> None:
    unit, plan, _, leader = _one_partition(
        record_batch(0, 10), record_batch(10, 10), plan=_plan(reserve=15)
    )
    _turn(unit, plan)
    _turn(unit, plan)
    p = unit._parts[("t", 0)]
    assert leader.produced == [[("primary.t", 0, 0, 10)]]
    assert (p.state, p.next_send, p.waiting_ts) == ("waiting_reservation", 10, TS + 9)


def test_a_plan_that_starts_inside_a_batch_copies_its_rest_rebuilt_then_passes_batches() -> None:
    unit, plan, source, leader = _one_partition(
        record_batch(0, 10), record_batch(10, 10), plan=_plan(start=5)
    )
    _turn(unit, plan)  # the rest of the first batch, acknowledged before more
    _turn(unit, plan)  # the first batch is behind the position now: skipped
    assert leader.produced == [[("primary.t", 0, 0, 5)], [("primary.t", 0, 5, 10)]]
    p = unit._parts[("t", 0)]
    assert (p.error, p.records, p.prev_up, p.prev_down, p.syncs) == (None, 15, 19, 14, [(5, 0)])


def test_a_compacted_batch_is_sent_as_its_runs_with_syncs_on_both_sides_of_each_gap() -> None:
    unit, plan, _, leader = _one_partition(record_batch(0, 4, deltas=[0, 1, 3, 4]))
    _turn(unit, plan)
    _turn(unit, plan)  # fetched again from offset 2: the batch is rebuilt from there
    assert leader.produced == [[("primary.t", 0, 0, 2)], [("primary.t", 0, 2, 2)]]
    p = unit._parts[("t", 0)]
    assert (p.error, p.records, p.syncs) == (None, 4, [(0, 0), (1, 1), (3, 2)])


def test_a_batch_the_cleaner_emptied_at_both_ends_maps_its_records_and_moves_past_it() -> None:
    """As Kafka's cleaner leaves a batch: its base offset's record gone, its last offset
    delta still past its last record (4 and 5 removed)."""
    raw = bytearray(record_batch(0, 2, deltas=[1, 2]))
    struct.pack_into(">i", raw, 23, 5)  # the last offset delta: the batch ends at offset 5
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    unit, plan, _, leader = _one_partition(bytes(raw), record_batch(6, 3))
    for _ in range(3):
        _turn(unit, plan)
    assert leader.produced == [[("primary.t", 0, 0, 2)], [("primary.t", 0, 2, 3)]]
    p = unit._parts[("t", 0)]
    assert (p.error, p.records, p.syncs) == (None, 5, [(1, 0), (2, 1), (6, 2)])


def test_a_batch_that_cannot_be_rebuilt_stops_its_partition_as_poison() -> None:
    raw = bytearray(record_batch(0, 10))
    struct.pack_into(">h", raw, 21, struct.unpack_from(">h", raw, 21)[0] | 0x05)  # no codec 5
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    unit, plan, _, leader = _one_partition(bytes(raw), plan=_plan(start=5))
    _turn(unit, plan)
    error = unit._parts[("t", 0)].error
    assert error is not None and (error["kind"], error["class"], error["offset"]) == (
        "poison",
        "BatchNotPassedThrough",
        5,
    )
    assert "offsets 0..9 cannot be decoded to be copied from offset 5" in error["message"]
    assert leader.produced == [] and unit._failure is None


def test_a_partition_whose_offset_is_out_of_range_stops_for_the_driver_to_decide() -> None:
    unit, plan, source, leader = _one_partition()
    source.errors[("t", 0)] = 1
    _turn(unit, plan)
    p = unit._parts[("t", 0)]
    assert p.error is not None and p.error["kind"] == "out_of_range" and p.stopped
    assert p.error["message"] == "offset 0 is no longer (or not yet) in the source partition"
    assert leader.produced == [] and unit._failure is None


def test_a_source_leader_that_moved_is_looked_up_again_and_other_errors_are_reported() -> None:
    unit, plan, source, _ = _one_partition()
    source.errors[("t", 0)] = 6
    _turn(unit, plan)
    looked_up = unit._clients.source.refreshes  # type: ignore[union-attr]
    _turn(unit, plan)
    assert unit._clients.source.refreshes == looked_up + 1  # type: ignore[union-attr]
    assert unit._poll_error is None
    source.errors[("t", 0)] = 29
    _turn(unit, plan)
    assert unit._poll_error == (
        "reading primary: broker (source): Fetch of t-0: error 29 TOPIC_AUTHORIZATION_FAILED"
    )
    del source.errors[("t", 0)]
    source.log[("t", 0)] = [record_batch(0, 10)]
    _turn(unit, plan)  # a fetch without errors clears it
    assert unit._poll_error is None and unit._parts[("t", 0)].records == 10
    assert unit._failure is None


def test_at_most_five_produce_requests_are_in_flight_to_a_broker() -> None:
    unit, plan, source, leader = _one_partition(record_batch(0, 10))
    _turn(unit, plan)
    source.log[("t", 0)] += [record_batch(10 * n, 10) for n in range(1, 8)]
    _turn(unit, plan)
    assert (leader.most_in_flight, len(leader.produced)) == (batch_unit.WINDOW, 8)
    assert (unit._parts[("t", 0)].records, unit._failure) == (80, None)


def test_nothing_is_sent_once_the_lease_ran_out() -> None:
    unit, plan, source, leader = _one_partition(record_batch(0, 10))
    _turn(unit, plan)
    source.log[("t", 0)].append(record_batch(10, 10))
    fetched = unit._poll(plan)
    unit.lease.deadline_ns = time.monotonic_ns()
    with unit.lock:
        unit._copy(plan, fetched)
    failure = unit._failure
    assert failure is not None and failure["kind"] == "lease"
    assert failure["message"] == "the lease of f ran out in this slot while copying"
    assert leader.produced == [[("primary.t", 0, 0, 10)]]


def test_a_send_refused_by_the_socket_or_an_answer_too_late_breaks_the_unit() -> None:
    unit, plan, source, leader = _one_partition(record_batch(0, 10))
    leader.refuse = WireError("broker b:9092: cannot send: [Errno 32] Broken pipe")
    _turn(unit, plan)
    failure = unit._failure
    assert failure is not None and failure["kind"] == "transient"
    assert failure["message"] == f"writing to target cluster 'backup': {leader.refuse}{_REACH}"

    plan = _plan(**{"delivery.timeout.ms": "1"})
    unit, plan, source, leader = _one_partition(record_batch(0, 10), plan=plan)
    leader.hold = True
    _turn(unit, plan)
    time.sleep(0.005)
    with unit.lock:
        unit._serve()
    failure = unit._failure
    assert failure is not None and failure["message"] == (
        "writing to target cluster 'backup': broker b:9092: no answer to a Produce within"
        " the write timeout" + _REACH
    )
