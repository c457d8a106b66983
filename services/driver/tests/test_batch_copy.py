"""The batch copy's pure rules (``srm.copy.batches``): which fetched batches a
``read_committed`` copy passes on (:func:`batch_rules.data_batches`), what it does with
each (:func:`batch_rules.step`), a batch landing where planned with the offset syncs of
its boundaries (:meth:`PartitionCopy.land_batch`), and which flows the driver copies with
batches at all (:func:`batch_copy_refusal`, the answer's settings, the slot's plan)."""

from __future__ import annotations

import logging
import random
import struct
import subprocess
import sys
from dataclasses import replace

import pytest
from aiokafka.record.default_records import DefaultRecordBatch
from hypothesis import given
from hypothesis import strategies as st
from srm_common.config.loader import parse_properties_text
from srm_driver.copier.batch_clients import Sent
from srm_driver.copier.batch_rebuild import decide, rebuild, refused_size
from srm_driver.copier.batch_rules import (
    DELETE_HORIZON,
    REBUILD,
    SEND,
    SKIP,
    WAIT,
    Batch,
    data_batches,
    step,
)
from srm_driver.copier.batch_unit import BatchUnit
from srm_driver.copier.lease import Lease
from srm_driver.copier.partition import STOPPED, STOPPING, PartitionCopy
from srm_driver.copier.plan import parse_plan
from srm_driver.copier.wire.batches import crc32c
from srm_driver.copying.clients import batch_copy_refusal, unit_settings
from srm_driver.testing import TS, produce_answer, record_batch


def _parsed(text: str):  # type: ignore[no-untyped-def]
    return parse_properties_text(text, source="srm.properties")


def _kept(*batches: bytes, aborted=(), read_committed=True):  # type: ignore[no-untyped-def]
    found, after = data_batches(
        memoryview(b"".join(batches)), aborted, read_committed=read_committed
    )
    return [(b.first, b.last) for b in found], after


# -- which batches a read_committed copy passes on ------------------------------------------


def test_markers_and_aborted_transactions_are_left_out_as_a_read_committed_consumer_does() -> None:
    log = (
        record_batch(0, 5),
        record_batch(5, 2, producer_id=7, transactional=True),  # aborted below
        record_batch(7, 1, producer_id=7, transactional=True, control=True),  # its abort marker
        # a later, committed transaction of producer 7
        record_batch(8, 2, producer_id=7, transactional=True),
        record_batch(10, 1, producer_id=7, transactional=True, control=True),
        record_batch(11, 3),
    )
    assert _kept(*log, aborted=[(7, 5)]) == ([(0, 4), (8, 9), (11, 13)], 14)
    assert _kept(*log) == ([(0, 4), (5, 6), (8, 9), (11, 13)], 14)  # nothing aborted
    # read_uncommitted keeps every data batch, aborted or not (as that consumer would)
    assert _kept(*log, aborted=[(7, 5)], read_committed=False)[0] == [
        (0, 4), (5, 6), (8, 9), (11, 13)
    ]  # fmt: skip


def test_an_aborted_transaction_of_another_producer_leaves_the_others_alone() -> None:
    log = (
        record_batch(0, 2, producer_id=3, transactional=True),
        record_batch(2, 2, producer_id=4, transactional=True),  # aborted
        record_batch(4, 1, producer_id=4, transactional=True, control=True),
        record_batch(5, 1, producer_id=3, transactional=True, control=True),
    )
    assert _kept(*log, aborted=[(4, 2)]) == ([(0, 1)], 6)


def test_a_batch_cut_off_by_the_fetch_size_is_fetched_again() -> None:
    whole, cut = record_batch(0, 3), record_batch(3, 3)
    assert _kept(whole, cut[:-1]) == ([(0, 2)], 3)
    assert _kept(cut[:40]) == ([], -1)


# -- what is done with each -----------------------------------------------------------------


def _read(raw: bytes) -> Batch:
    return Batch.read(memoryview(raw))


def test_a_whole_batch_at_the_position_below_the_reservation_is_sent() -> None:
    batch = _read(record_batch(100, 10))
    assert step(batch, 100, 110, 50) == SEND
    assert step(batch, 100, 109, 50) == WAIT  # its last offset must be below the reservation
    assert step(batch, 110, 200, 50) == SKIP  # copied already
    assert step(batch, 90, 200, 50) == SEND  # a gap before it (an aborted transaction)


def _with_attributes(raw: bytes, bits: int) -> bytes:
    """``raw`` with attribute ``bits`` set, its CRC sealed again."""
    sealed = bytearray(raw)
    struct.pack_into(">h", sealed, 21, struct.unpack_from(">h", sealed, 21)[0] | bits)
    struct.pack_into(">I", sealed, 17, crc32c(bytes(sealed[21:])))
    return bytes(sealed)


@pytest.mark.parametrize("codec", [0, 4], ids=["none", "zstd"])
def test_a_batch_wider_than_the_window_is_rebuilt_in_pieces_that_pass(codec: int) -> None:
    """A batch of 10 offsets under a window of 4 could never end below a reservation:
    rebuilt as 4 + 4 + 2 records, each then sent once the reservation allows it."""
    source = _read(record_batch(100, 10, codec=codec, headers=True))
    assert step(source, 100, 10**9, 4) == REBUILD
    pieces = decide(source, 100, 104, 4)
    assert isinstance(pieces, list)
    assert [(b.first, b.last, b.count) for b in pieces] == [(100, 103, 4), (104, 107, 4),
                                                            (108, 109, 2)]  # fmt: skip
    assert [r for b in pieces for r in _records(b)] == _records(source)
    assert {b.attributes & 0x07 for b in pieces} == {codec}
    assert [step(b, 100, 104, 4) for b in pieces] == [SEND, WAIT, WAIT]
    assert decide(source, 100, 104, 10) == WAIT  # as wide as the window: passes whole later


@pytest.mark.parametrize(
    ("raw", "position"),
    [
        (record_batch(100, 10), 105),
        (record_batch(100, 3, deltas=[0, 2, 5]), 100),
        (record_batch(100, 3, log_append_time=True), 100),
        (_with_attributes(record_batch(100, 3), DELETE_HORIZON), 100),
    ],
    ids=["inside-a-batch", "compacted", "log-append-time", "delete-horizon"],
)
def test_a_batch_whose_offsets_or_timestamps_a_target_would_change_is_rebuilt(
    raw: bytes, position: int
) -> None:
    assert step(_read(raw), position, 10**9, 50) == REBUILD


def test_a_damaged_batch_is_refused_not_rebuilt() -> None:
    raw = bytearray(record_batch(100, 10))
    raw[-1] ^= 0xFF  # a value's last byte
    refusal = step(_read(bytes(raw)), 105, 10**9, 50)
    assert "fails its CRC-32C check" in refusal
    assert refusal.endswith("--from offset --offset 110)")  # the way past it: after the batch


# -- rebuilding ---------------------------------------------------------------------------------


def _records(batch: Batch) -> list[tuple[object, ...]]:
    return [
        (r.offset, r.timestamp, r.key, r.value, tuple(r.headers))
        for r in DefaultRecordBatch(bytes(batch.view))
    ]


def _shape(batch: Batch) -> tuple[int, int, int, int]:
    return batch.first, batch.last, batch.count, batch.attributes


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4], ids=["none", "gzip", "snappy", "lz4", "zstd"])
def test_a_batch_the_position_lies_inside_is_rebuilt_from_there_with_its_codec(codec: int) -> None:
    source = _read(record_batch(100, 10, codec=codec, headers=True))
    (rebuilt,) = rebuild(source, 105)
    assert _shape(rebuilt) == (105, 109, 5, codec)
    assert _records(rebuilt) == _records(source)[5:]
    assert step(rebuilt, 105, 10**9, 50) == SEND


def test_a_compacted_batch_is_rebuilt_as_one_batch_per_run_of_offsets() -> None:
    source = _read(record_batch(100, 5, deltas=[0, 1, 3, 4, 7]))
    runs = rebuild(source, 100)
    assert isinstance(runs, list)
    assert [(b.first, b.last, b.count) for b in runs] == [
        (100, 101, 2),
        (103, 104, 2),
        (107, 107, 1),
    ]
    assert [r for b in runs for r in _records(b)] == _records(source)
    tail = rebuild(source, 104)
    assert isinstance(tail, list) and [(b.first, b.count) for b in tail] == [(104, 1), (107, 1)]
    assert rebuild(source, 108) == [], "nothing left of it from there"


def test_records_without_a_timestamp_keep_none_when_a_run_would_start_with_them() -> None:
    source = _read(record_batch(100, 4, timestamps=[TS, -1, -1, TS + 9]))
    runs = rebuild(source, 101)
    assert isinstance(runs, list) and [(b.first, b.count) for b in runs] == [(101, 2), (103, 1)]
    assert [r for b in runs for r in _records(b)] == _records(source)[1:]


def test_a_run_that_comes_out_larger_than_its_limit_is_split_until_each_half_fits() -> None:
    source = _read(record_batch(100, 40, codec=4, headers=True))
    runs = rebuild(source, 100, limit=200)
    assert isinstance(runs, list) and len(runs) > 1
    assert all(len(b.view) <= 200 or b.count == 1 for b in runs)
    assert [r for b in runs for r in _records(b)] == _records(source)
    assert [b.first for b in runs[1:]] == [b.last + 1 for b in runs[:-1]], "back to back"


def test_a_log_append_time_batch_is_rebuilt_with_that_time_as_every_records_timestamp() -> None:
    source = _read(record_batch(100, 3, log_append_time=True))
    (rebuilt,) = rebuild(source, 100)
    assert _shape(rebuilt) == (100, 102, 3, 0), "CreateTime, as the record copy writes it"
    assert [r[1] for r in _records(rebuilt)] == [source.max_timestamp] * 3
    assert [r[2:] for r in _records(rebuilt)] == [r[2:] for r in _records(source)]


def test_a_batch_with_the_sources_delete_horizon_is_rebuilt_without_it() -> None:
    """(Its horizon is the first record's time here, so its base timestamp is both.)"""
    source = _read(_with_attributes(record_batch(100, 3, codec=4), DELETE_HORIZON))
    (rebuilt,) = rebuild(source, 100)
    assert _shape(rebuilt) == (100, 102, 3, 4), "the codec kept, the horizon gone"
    assert _records(rebuilt) == _records(source)


def test_a_batch_that_cannot_be_decoded_is_refused_with_how_to_copy_it() -> None:
    raw = bytearray(record_batch(100, 10))
    attributes = struct.unpack_from(">h", raw, 21)[0] | 0x05  # no such codec
    struct.pack_into(">h", raw, 21, attributes)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    said = rebuild(_read(bytes(raw)), 105)
    assert isinstance(said, str)
    assert "offsets 100..109 cannot be decoded to be copied from offset 105" in said
    assert "srm.copy.batches = false" in said


@given(
    st.lists(st.tuples(st.integers(1, 4), st.sampled_from([-1, TS, TS + 7])), min_size=1,
             max_size=30),
    st.integers(0, 120),
    st.sampled_from([0, 1, 4]),
)  # fmt: skip
def test_rebuilt_batches_hold_exactly_the_records_from_the_position_in_contiguous_runs(
    records: list[tuple[int, int]], position: int, codec: int
) -> None:
    deltas = [sum(step for step, _ in records[:n]) for n in range(len(records))]
    # (The first record has a time: a source batch's base timestamp is its first's.)
    times = [TS] + [ts for _, ts in records[1:]]
    source = _read(record_batch(0, len(deltas), deltas=deltas, codec=codec, timestamps=times))
    runs = rebuild(source, position)
    assert isinstance(runs, list)
    assert [r for b in runs for r in _records(b)] == [
        r
        for r in _records(source)
        if r[0] >= position  # type: ignore[operator]
    ]
    for batch in runs:
        assert batch.count == batch.last - batch.first + 1 and batch.attributes & 0x07 == codec
        assert step(batch, batch.first, 10**9, 10**6) == SEND


# -- landing where planned, and the offset syncs ----------------------------------------------


def _copy() -> PartitionCopy:
    return PartitionCopy("t", 0, 1, "r", 0, 0, 10**9, False)


def _records_landed(offsets: list[int], reports_after: set[int]) -> list[tuple[int, int]]:
    p = _copy()
    for n, up in enumerate(offsets):
        p.sent(up, 1, TS)
        assert p.land(n, TS + 5)
        if n in reports_after:
            p.report(True)
    p.report(True)
    return p.syncs


def _runs(offsets: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for up in offsets:
        if runs and up == runs[-1][-1] + 1 and len(runs[-1]) < 4:
            runs[-1].append(up)
        else:
            runs.append([up])
    return runs


@given(st.lists(st.integers(1, 5), min_size=1, max_size=40), st.integers(0, 2**32))
def test_batches_give_the_offset_syncs_their_records_would_give(steps, seed) -> None:  # type: ignore[no-untyped-def]
    """Contiguous batches landed whole give the syncs of the same records landed one by
    one, with reports between batches at the same places."""
    offsets = [sum(steps[: n + 1]) for n in range(len(steps))]
    runs = _runs(offsets)
    reports = {n for n in range(len(runs)) if random.Random(seed + n).random() < 0.3}
    p = _copy()
    down, ends = 0, set()
    for n, run in enumerate(runs):
        p.sent_batch(run[0], run[-1], len(run), 10 * len(run), TS)
        assert p.land_batch(down, len(run), TS + 5)
        down += len(run)
        if n in reports:
            p.report(True)
            ends.add(down - 1)
    p.report(True)
    assert p.syncs == _records_landed(offsets, ends)
    n = len(offsets)
    assert (p.records, p.bytes, p.prev_up, p.prev_down) == (n, 10 * n, offsets[-1], n - 1)


def test_a_batch_that_lands_elsewhere_changes_nothing_and_counts_every_record_when_it_lands() -> (
    None
):
    p = _copy()
    p.sent_batch(0, 9, 10, 5_000, TS)
    p.sent_batch(10, 14, 5, 2_000, TS + 40)
    assert p.next_send == 15 and p.next_down == 15
    assert not p.land_batch(3, 10, TS + 100)  # another writer: the unit's failure
    assert (p.records, len(p.inflight), p.syncs) == (0, 2, [])
    assert p.land_batch(0, 10, TS + 100)
    p.stop()
    assert p.state == STOPPING
    assert p.land_batch(10, 5, TS + 100)
    assert p.state == STOPPED
    assert (p.records, p.bytes, p.latency_sum_ms) == (15, 7_000, 10 * 100 + 5 * 60)
    assert (p.latency_min_ms, p.latency_max_ms, sum(p.latency_hist)) == (60, 100, 15)
    assert p.syncs == [(0, 0)]
    assert p.report(True)["acked_up"] == 15


# -- which flows copy batches -----------------------------------------------------------------


def _flow(extra: str = "", policy: str = ""):  # type: ignore[no-untyped-def]
    text = f"""
clusters = primary, backup
primary.bootstrap.servers = p:9092
backup.bootstrap.servers = b:9092
primary->backup.enabled = true
srm.copy.batches = true
{policy}
{extra}
"""
    return _parsed(text).flow("primary", "backup")


def test_the_setting_is_on_by_default_off_when_said_and_bad_input_is_one_clear_message() -> None:
    clusters = "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\n"
    plain = _parsed(clusters + "a->b.enabled = true\n").flow("a", "b")
    assert plain.copy_batches is True
    assert unit_settings(plain, write_timeout_ms=4000).to_json()["batches"] == {"window": 50_000}
    off = _parsed(clusters + "a->b.enabled = true\na->b.srm.copy.batches = false\n").flow("a", "b")
    assert off.copy_batches is False
    assert "batches" not in unit_settings(off, write_timeout_ms=4000).to_json()
    assert unit_settings(off, write_timeout_ms=4000).window == 0  # unused when off
    with pytest.raises(Exception, match=r"srm.copy.batches.*expected true or false.*'yes'"):
        _parsed(clusters + "srm.copy.batches = yes\n")


@pytest.mark.parametrize(("asked", "level"), [("", "INFO"), ("srm.copy.batches = true", "WARNING")])
def test_a_flow_that_cannot_copy_batches_says_so_louder_when_its_configuration_asked(
    asked: str, level: str, caplog: pytest.LogCaptureFixture
) -> None:
    """By default (batches on) an identity flow copying record by record is expected: INFO.
    A configuration that asks for batches and does not get them: WARNING."""
    identity = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
    clusters = "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\n"
    text = f"{clusters}a->b.enabled = true\nreplication.policy.class = {identity}\n{asked}\n"
    with caplog.at_level(logging.INFO, logger="srm_driver.copying.clients"):
        unit_settings(_parsed(text).flow("a", "b"), write_timeout_ms=4000)
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert said == [
        (level, "a->b: copies its records one by one, not whole batches (srm.copy.batches):"
         " its target is shared (identity policy): each copy carries origin headers")
    ]  # fmt: skip


@pytest.mark.parametrize("window", [0, -1])
def test_a_batch_window_below_one_is_refused_where_it_is_read(window: int) -> None:
    """At config load (one line naming the key and its range), and in a control answer
    (which would otherwise read a window of 0 as "copy record by record")."""
    said = rf"key 'srm.batch.max.records': expected a whole number >= 1, got '{window}'$"
    with pytest.raises(Exception, match=said):
        _flow(f"srm.batch.max.records = {window}")
    said = rf"'window' \(srm.batch.max.records\) must be >= 1, got {window}$"
    with pytest.raises(ValueError, match=said):
        parse_plan("f", 1, {"epoch": 1, "partitions": [], "settings": {
            "consumer": {}, "producer": {}, "source": "a", "target": "b", "poll_ms": 1,
            "batches": {"window": window}}})  # fmt: skip
    settings = unit_settings(_flow(), write_timeout_ms=4000)
    with pytest.raises(ValueError, match=f"srm.batch.max.records must be >= 1.*got {window}$"):
        replace(settings, window=window)


def test_the_batch_unit_is_imported_only_by_a_slot_told_to_copy_batches() -> None:
    code = (
        "import sys, srm_driver.copier.control as c\n"
        "assert 'srm_driver.copier.batch_unit' not in sys.modules\n"
        "from srm_driver.copier.plan import parse_plan\n"
        "settings = {'consumer': {}, 'producer': {}, 'source': 'a', 'target': 'b',"
        " 'poll_ms': 1, 'batches': {'window': 5}}\n"
        "plan = parse_plan('f', 1, {'epoch': 1, 'partitions': [], 'settings': settings})\n"
        "print(c._unit_kind(plan).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr[-300:]) == (0, "BatchUnit\n", "")


def test_a_flow_copies_batches_unless_its_target_is_shared_or_it_logs_in_with_gssapi() -> None:
    flow = _flow("srm.batch.max.records = 700")
    assert batch_copy_refusal(flow) is None
    settings = unit_settings(flow, write_timeout_ms=4000).to_json()
    assert settings["batches"] == {"window": 700}
    body = {"epoch": 1, "settings": settings, "partitions": []}
    assert parse_plan("primary->backup", 3, body).batch_window == 700
    del body["settings"]["batches"]  # type: ignore[attr-defined]
    assert not parse_plan("primary->backup", 3, body).batches

    identity = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
    shared = _flow(policy=f"replication.policy.class = {identity}")
    assert "shared" in (batch_copy_refusal(shared) or "")
    assert "batches" not in unit_settings(shared, write_timeout_ms=4000).to_json()
    kerberos = _flow(
        "primary.security.protocol = SASL_PLAINTEXT\nprimary.sasl.mechanism = GSSAPI\n"
        "primary.sasl.kerberos.service.name = kafka\nprimary.sasl.jaas.config ="
        " com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true"
        ' keyTab="/etc/srm/srm.keytab" principal="srm@REALM";'
    )
    assert "source logs in with SASL GSSAPI" in (batch_copy_refusal(kerberos) or "")
    scram = _flow(
        "backup.security.protocol = SASL_PLAINTEXT\nbackup.sasl.mechanism = SCRAM-SHA-512\n"
        "backup.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule"
        ' required username="u" password="p";'
    )
    assert batch_copy_refusal(scram) is None


# -- the unit's answer to a Produce: the fence's proof per batch ----------------------------


class _Broker:
    broker = "127.0.0.1:9092"


def _unit_with_a_batch_in_flight() -> tuple[BatchUnit, Sent, PartitionCopy]:
    settings = {"consumer": {}, "producer": {}, "source": "primary", "target": "backup",
                "poll_ms": 100, "batches": {"window": 1000}}  # fmt: skip
    partitions = [{"topic": "t", "partition": n, "plan": 1, "remote": "primary.t",
                   "start": 0, "down": 0, "reserve": 10**9} for n in (0, 1)]  # fmt: skip
    plan = parse_plan("f", 1, {"epoch": 1, "settings": settings, "partitions": partitions})
    unit = BatchUnit(plan, Lease(), lambda: None, connect=lambda *_: pytest.fail("no I/O"))
    unit._open()
    unit._apply(plan)
    p, other = unit._parts[("t", 0)], unit._parts[("t", 1)]
    p.sent_batch(0, 9, 10, 1_000, TS)
    other.sent_batch(0, 4, 5, 500, TS)
    batch = _read(record_batch(0, 10))
    sent = Sent(_Broker(), 0, 0, {("primary.t", 0): (p, batch)})  # type: ignore[arg-type]
    unit._sent.append(sent)
    return unit, sent, p


def test_a_batch_landed_where_planned_counts_its_records() -> None:
    unit, sent, p = _unit_with_a_batch_in_flight()
    unit._landed(sent, produce_answer(("primary.t", 0, 0, 0)), TS + 10)
    assert (p.records, p.established, p.syncs, unit._failure) == (10, True, [(0, 0)], None)


@pytest.mark.parametrize(
    ("error", "base", "kind", "said"),
    [
        (0, 7, "conflict", "took upstream offset 0 at offset 7 where offset 0 was planned"),
        (10, -1, "poison", "Produce to primary.t-0: error 10 MESSAGE_TOO_LARGE (said so)"),
        (2, -1, "poison", "Produce to primary.t-0: error 2 CORRUPT_MESSAGE (said so)"),
        (6, -1, "transient", "error 6 NOT_LEADER_OR_FOLLOWER"),
        (
            29,
            -1,
            "transient",
            "writing to target cluster 'backup': broker 127.0.0.1:9092: Produce"
            " to primary.t-0: error 29 TOPIC_AUTHORIZATION_FAILED (said so); check that this"
            " slot's principal may write the remote topics (Write)",
        ),
    ],
    ids=["another-writer", "refused", "unreadable", "leader-moved", "no-write-access"],
)
def test_a_batch_landed_elsewhere_or_refused_breaks_the_unit_and_every_send_is_uncertain(
    error: int, base: int, kind: str, said: str
) -> None:
    unit, sent, p = _unit_with_a_batch_in_flight()
    unit._landed(sent, produce_answer(("primary.t", 0, error, base)), TS + 10)
    failure = unit._failure
    assert failure is not None and failure["kind"] == kind and said in failure["message"]
    assert ("; check that" in failure["message"]) == (error == 29)  # ACLs: authorization only
    assert (failure["topic"], failure["partition"], failure["offset"]) == ("t", 0, 0)
    assert p.records == 0
    for part in unit._parts.values():  # every partition waits for a new plan
        assert part.state == STOPPED and part.uncertain and not part.inflight
    assert not unit._sent and unit._clients.producer is None
    # A refused batch's records are sent again one per batch; nothing else is split.
    assert unit._refused.at(("t", 0), 0) == (0 if kind == "poison" else None)
    assert unit._refused.at(("t", 0), 1) is None and unit._refused.at(("t", 0), 0) is None
    if error == 10:
        assert failure["message"].endswith(
            "(the target refused a batch of 10 records, 171 bytes: the remote topic's"
            " max.message.bytes is lower; they are sent again one batch each)"
        )


@pytest.mark.parametrize("codec", [0, 4], ids=["none", "zstd"])
def test_the_source_batch_holding_a_refused_offset_is_sent_again_one_record_per_batch(
    codec: int,
) -> None:
    """The target refused the batch of offsets 100..109 (say a 2 MiB record at 104): it is
    rebuilt as ten batches, so 100..103 are copied and only 104's refusal stops the
    partition there, saying its value's size, as the record copy does."""
    source = _read(record_batch(100, 10, codec=codec, headers=True))
    singles = decide(source, 100, 10**9, 50, alone=100)
    assert isinstance(singles, list)
    assert [(b.first, b.count) for b in singles] == [(100 + i, 1) for i in range(10)]
    assert [r for b in singles for r in _records(b)] == _records(source)
    assert [decide(b, 100, 10**9, 50, alone=100) for b in singles] == [SEND] * 10
    assert decide(source, 100, 10**9, 50, alone=99) == SEND  # another batch's refusal
    assert decide(source, 110, 10**9, 50, alone=104) == SKIP  # copied past it
    value = len(_records(singles[4])[0][3])  # type: ignore[arg-type]
    assert refused_size(singles[4]) == (
        f" (the target refused a record whose value is {value:,} bytes: the remote topic's"
        " max.message.bytes is lower)"
    )


def _old_message(offset: int, timestamp: int) -> bytes:
    """A magic 1 message (offset, size, crc, magic, attributes, timestamp, key, value)."""
    body = (
        struct.pack(">bbq", 1, 0, timestamp) + struct.pack(">i", -1) + struct.pack(">i", 3) + b"abc"
    )
    return struct.pack(">qii", offset, 4 + len(body), 0) + body


def test_a_message_of_the_old_format_is_refused_whole_and_nothing_after_it_is_read() -> None:
    """Read as a v2 header, a magic 1 message's timestamp gave the CONTROL bit and a last
    offset 275 million ahead: records skipped in silence. It is refused instead."""
    records = _old_message(5, 0x018BEF106800) + record_batch(6, 3)
    found, after = data_batches(memoryview(records), [])
    assert [(b.first, b.magic) for b in found] == [(5, 1)] and after == -1
    decision = step(found[0], 0, 100, 100)
    assert decision.startswith("the source message at offset 5 has the old format (magic 1)")
    short = _old_message(5, 7)[:40]  # shorter than a v2 header: not taken for a cut-off batch
    assert [b.magic for b in data_batches(memoryview(short), [])[0]] == [1]


def test_a_batch_whose_checksum_does_not_hold_is_refused_not_sealed_again() -> None:
    damaged = bytearray(record_batch(0, 3))
    damaged[-2] ^= 0xFF  # a byte of its last record's value
    (batch,), _ = data_batches(memoryview(bytes(damaged)), [])
    assert "fails its CRC-32C check" in step(batch, 0, 100, 100)
    (intact,), _ = data_batches(memoryview(record_batch(0, 3)), [])
    assert step(intact, 0, 100, 100) == SEND
