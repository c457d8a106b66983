"""The batch copy (``srm.copy.batches = true``) on real brokers: whole record batches
passed through by the copy slot, across kill -9 of the driver.

A unit alone first (no driver): a zstd topic with an aborted and a committed transaction
is copied with every committed record at its planned offset, the offset syncs it
reports translate every record exactly; a partition whose plan starts inside a batch
is copied from there by a rebuilt batch, and a LogAppendTime topic keeps its times.

Then the product: producers write numbered records the whole time to two topics of one flow, one
uncompressed and one zstd, while the driver (Python and its Spark JVM) is killed with
SIGKILL at random moments and started again. At the end every source partition and its
remote twin hold the same records (keys, values, headers, timestamps) at the same
offsets, none missing, none twice; the remote topics hold the source's batches as they
were (the same batches, record counts, codecs and bytes: nothing was decoded or
re-batched); every offset sync the flow wrote maps a source record to its copy, and the
flow's offset translation (``FlowOffsets``, what checkpoints use) is exact at every offset.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest
from confluent_kafka import Producer
from srm_common.adapters.flow_offsets import FlowOffsets
from srm_common.config.loader import load_config
from srm_common.domain.records import OffsetSync
from srm_driver.copier.batch_unit import BatchUnit
from srm_driver.copier.lease import Lease
from srm_driver.copier.plan import parse_plan
from srm_harness.clients import SteadyProducer, consume_all, end_offsets
from srm_harness.compare import count_copy
from srm_harness.control import write_config
from srm_harness.log_batches import WORTH_COMPRESSING, data_codecs, log_batches
from srm_harness.processes import DriverProcess
from srm_harness.records import RECENT_MS
from srm_harness.waits import wait_caught_up, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 3
KILLS = 4
CODECS = ("none", "zstd")
PER_TICK = 20
SYNCS_TOPIC = "mm2-offset-syncs.backup.internal"  # on primary (location "source")


def _plan(kafka, topic: str, remote: str, starts: dict[int, int]):  # type: ignore[no-untyped-def]
    settings = {
        "consumer": {"bootstrap.servers": kafka["primary"], "isolation.level": "read_committed"},
        "producer": {"bootstrap.servers": kafka["backup"], "delivery.timeout.ms": "10000",
                     "request.timeout.ms": "5000"},
        "origin_header": None, "copy_header": None, "source": "primary", "target": "backup",
        "poll_ms": 100, "batches": {"window": 50_000},
    }  # fmt: skip
    partitions = [
        {"topic": topic, "partition": p, "plan": 1, "remote": remote, "start": start,
         "down": 0, "reserve": 10**9}
        for p, start in starts.items()
    ]  # fmt: skip
    return parse_plan("primary->backup", 1, {"epoch": 1, "settings": settings,
                                             "partitions": partitions})  # fmt: skip


def _produce_with_transactions(bootstrap: str, topic: str) -> None:
    plain = Producer({"bootstrap.servers": bootstrap, "compression.type": "zstd", "linger.ms": 20})
    tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx",
                   "compression.type": "zstd"})  # fmt: skip
    tx.init_transactions(30)

    def records(first: int, count: int) -> None:
        for n in range(first, first + count):
            plain.produce(topic, key=b"k%d" % n, value=b'{"n": %d}' % n * 10, partition=n % 2,
                          timestamp=RECENT_MS + n, headers=[("n", b"%d" % n)])  # fmt: skip
        assert plain.flush(30) == 0

    def transaction(first: int, count: int, commit: bool) -> None:
        tx.begin_transaction()
        for n in range(first, first + count):
            tx.produce(topic, key=b"t%d" % n, value=b"tx %d" % n, partition=n % 2)
        tx.flush(30)
        (tx.commit_transaction if commit else tx.abort_transaction)(30)

    records(0, 1_000)
    transaction(0, 200, commit=False)
    records(1_000, 1_000)
    transaction(200, 100, commit=True)
    records(2_000, 500)


def _run(unit: BatchUnit) -> threading.Thread:
    unit.lease.grant(time.monotonic_ns(), 120_000)
    thread = threading.Thread(target=unit.run, daemon=True)
    thread.start()
    return thread


def _report(unit: BatchUnit) -> dict[int, dict[str, Any]]:
    entry, _ = unit.report({}, set(), None, full=True)
    return {p["partition"]: p for p in entry["partitions"]}


def _landed(kafka, remote: str, unit: BatchUnit, wanted: dict[int, int]) -> bool:  # type: ignore[no-untyped-def]
    """Every wanted record is on the target and the unit counted it: a batch is on the
    broker before its acknowledgement reaches the unit's next poll."""
    if end_offsets(kafka["backup"], remote) != wanted:
        return False
    return {p: r["records"] for p, r in _report(unit).items()} == wanted


def test_a_unit_passes_committed_batches_through_with_exact_offset_syncs(kafka, unique_name):  # type: ignore[no-untyped-def]
    topic = kafka.create_topic("primary", unique_name("unit"), partitions=2)
    remote = kafka.create_topic("backup", f"primary.{topic}", partitions=2)
    _produce_with_transactions(kafka["primary"], topic)
    source = consume_all(kafka["primary"], topic)
    unit = BatchUnit(_plan(kafka, topic, remote, {0: 0, 1: 0}), Lease(), lambda: None)
    thread = _run(unit)
    try:
        wanted = {p: len(records) for p, records in source.items()}
        wait_until(lambda: _landed(kafka, remote, unit, wanted), 60,
                   "the committed records copied", detail=lambda: str(_report(unit)))  # fmt: skip
        reported = _report(unit)
    finally:
        unit.request_stop()
        thread.join(30)
    target = consume_all(kafka["backup"], remote)
    for partition, records in source.items():
        assert [r.content() for r in target[partition]] == [r.content() for r in records]
        report = reported[partition]
        assert (report["records"], report["error"]) == (len(records), None)
        syncs = sorted(tuple(pair) for pair in report["syncs"])
        for down, record in enumerate(records):  # every record translates exactly
            up, at = max(pair for pair in syncs if pair[0] <= record.offset)
            assert at + record.offset - up == down, (record.offset, down, syncs)
    batches = log_batches(kafka["backup"], remote)
    assert {b.codec for bs in batches.values() for b in bs if b.records >= 10} == {"zstd"}
    assert unit.exited


@pytest.mark.parametrize(
    ("timestamps", "codec"),
    [("CreateTime", "zstd"), ("CreateTime", "snappy"), ("CreateTime", "lz4"),
     ("LogAppendTime", "gzip")],
)  # fmt: skip
def test_a_plan_inside_a_batch_and_log_append_times_are_copied_by_rebuilt_batches(
    kafka, unique_name, timestamps, codec
):  # type: ignore[no-untyped-def]
    """Partition 0 planned from offset 5, inside the source's first batch (a batch copy
    turned on where a record copy stopped): its remaining records are rebuilt into a
    batch, the later batches pass through as they are; a LogAppendTime topic's records
    keep the source broker's times as their timestamps. Each codec Kafka has, as the
    target broker reads what the slot compressed (it validates every record)."""
    config = {"message.timestamp.type": timestamps}
    topic = kafka.create_topic("primary", unique_name("inside"), partitions=2, config=config)
    remote = kafka.create_topic("backup", f"primary.{topic}", partitions=2)
    plain = Producer({"bootstrap.servers": kafka["primary"], "linger.ms": 100,
                      "compression.type": codec})  # fmt: skip
    for n in range(400):
        plain.produce(topic, key=b"k%d" % n, value=b"v%d" % n * 20, partition=n % 2,
                      headers=[("n", b"%d" % n)])  # fmt: skip
        if n == 200:
            assert plain.flush(30) == 0  # a second batch per partition
    assert plain.flush(30) == 0
    source = consume_all(kafka["primary"], topic)
    unit = BatchUnit(_plan(kafka, topic, remote, {0: 5, 1: 0}), Lease(), lambda: None)
    thread = _run(unit)
    try:
        wanted = {0: len(source[0]) - 5, 1: len(source[1])}
        wait_until(lambda: _landed(kafka, remote, unit, wanted), 60,
                   "both partitions copied", detail=lambda: str(_report(unit)))  # fmt: skip
        reported = _report(unit)
    finally:
        unit.request_stop()
        thread.join(30)
    target = consume_all(kafka["backup"], remote)
    assert [r.content() for r in target[0]] == [r.content() for r in source[0][5:]]
    assert [r.content() for r in target[1]] == [r.content() for r in source[1]]
    assert (reported[0]["error"], reported[0]["syncs"][0]) == (None, [5, 0])
    batches = log_batches(kafka["backup"], remote)
    assert data_codecs(batches, WORTH_COMPRESSING) == {codec}, "the codec kept"
    if timestamps == "CreateTime":
        sources = log_batches(kafka["primary"], topic)
        assert [b.records for b in batches[1]] == [b.records for b in sources[1]]
        assert [b.records for b in batches[0]] == [sources[0][0].records - 5] + [
            b.records for b in sources[0][1:]
        ], "only the batch the plan starts inside is rebuilt"


def test_batches_copied_across_kill9_lose_and_double_nothing_and_stay_as_they_were(
    kafka, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    topics = {
        codec: kafka.create_topic("primary", unique_name(f"batches-{codec}"), partitions=PARTITIONS)
        for codec in CODECS
    }
    remotes = {codec: f"primary.{topic}" for codec, topic in topics.items()}
    kafka.created += [("backup", remote) for remote in remotes.values()]
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {
                "enabled": True,
                "topics": list(topics.values()),
                "srm.copy.batches": True,
                # Small reservations: batches wait for them to move many times.
                "srm.batch.max.records": 300,
            },
            "backup->primary": {"enabled": False},
        },
        replication={"tasks.max": 2},
    )
    driver = DriverProcess(config, tmp_path / "driver.log")
    producers = {
        codec: SteadyProducer(kafka["primary"], topic, PARTITIONS, per_tick=PER_TICK, codec=codec)
        for codec, topic in topics.items()
    }

    def on_target() -> int:
        return sum(sum(end_offsets(kafka["backup"], r).values()) for r in remotes.values())

    for producer in producers.values():
        producer.start()
    rng = random.Random(20261127)
    try:
        for kill in range(KILLS):
            before = on_target()
            driver.start()
            wait_until(
                lambda before=before: on_target() > before,  # type: ignore[misc]
                180,
                f"driver start {kill + 1} copies batches",
                detail=lambda: driver.log_text()[-3000:],
                step=0.3,
            )
            time.sleep(rng.uniform(0.5, 3.0))
            driver.kill9()
        for producer in producers.values():
            producer.finish()
        driver.start()
        # Serving: its stop signal is handled from here on (the backlog may already be
        # copied, and a signal during start-up ends a process unhandled).
        wait_until(
            lambda: "REST at " in driver.log_text().rpartition(f"--- start {driver.starts}\n")[2],
            180,
            "the last driver start serves",
            detail=lambda: driver.log_text()[-3000:],
        )
        for codec, topic in topics.items():
            wait_caught_up(
                kafka["primary"],
                topic,
                kafka["backup"],
                remotes[codec],
                600,
                stalled_after=180,
                detail=lambda: driver.log_text()[-3000:],
            )
        # Taken over: the last start claimed every partition after the copies it verified,
        # which records where each copy ends. (Stopped before that, it would leave the
        # killed driver's last commit, behind the copy: verified by the next start.)
        ends = {topic: end_offsets(kafka["primary"], topic) for topic in topics.values()}
        taken = FlowOffsets(load_config(config).flow("primary", "backup"))

        def claimed() -> bool:
            taken.refresh()
            return all(
                getattr(taken.positions.get((topic, p)), "next_upstream", -1) == end
                for topic, by_partition in ends.items()
                for p, end in by_partition.items()
            )

        wait_until(claimed, 180, "the last start records where every copy ends",
                   detail=lambda: str(taken.positions))  # fmt: skip
        taken.close()
        assert driver.stop() == 0
    finally:
        for producer in producers.values():
            producer.stop.set()
        if driver.alive():
            driver.kill9()

    log = driver.log_text()
    assert "BatchNotPassedThrough" not in log
    syncs: dict[tuple[str, int], set[tuple[int, int]]] = {}
    for records in consume_all(kafka["primary"], SYNCS_TOPIC).values():
        for record in records:
            sync = OffsetSync.decode(record.key, record.value)
            syncs.setdefault((sync.topic, sync.partition), set()).add(
                (sync.upstream_offset, sync.downstream_offset)
            )
    # The flow's offset translation (what checkpoints and srm-control use) from those
    # syncs and the recorded progress: every group offset translates exactly, those
    # before the restarts included (the syncs a restart writes again keep the history),
    # and those past the last sync too: the last start took every partition over (above)
    # and its clean stop recorded each one's final progress where its copy ends.
    offsets = FlowOffsets(load_config(config).flow("primary", "backup"))
    offsets.refresh()
    for codec, topic in topics.items():
        for partition, records in consume_all(kafka["primary"], topic).items():
            final = offsets.positions[(topic, partition)]
            assert (final.next_upstream, final.inflight_end) == (len(records), None), final
            for c in range(len(records) + 1):
                got = offsets.forward(topic, partition, c)
                assert got.offset == c, f"{codec}: {topic}-{partition} at {c}: {got}"
    offsets.close()
    for codec, topic in topics.items():
        source = consume_all(kafka["primary"], topic)
        target = consume_all(kafka["backup"], remotes[codec])
        count = count_copy(source, target)
        print(f"\n{codec}: {count}, driver starts {driver.starts}")
        assert count.produced == producers[codec].sent, codec
        assert (count.missing, count.duplicated) == (0, 0), codec
        for partition in range(PARTITIONS):
            ours, theirs = source[partition], target[partition]
            assert [(r.offset, *r.content()) for r in theirs] == [
                (r.offset, *r.content()) for r in ours
            ], f"{codec}: partition {partition}"
            # Every sync maps a source record to its copy (the same offset here: no gaps).
            pairs = syncs.get((topic, partition), set())
            assert pairs, f"{codec}: no offset syncs for partition {partition}"
            assert all(up == down and up < len(ours) for up, down in pairs), sorted(pairs)[:10]
        # The source's batches, as they were: nothing decoded, re-batched or recompressed.
        had, copied = (
            log_batches(kafka["primary"], topic),
            log_batches(kafka["backup"], remotes[codec]),
        )
        for partition in range(PARTITIONS):
            shape = [(b.base_offset, b.records, b.codec, b.size) for b in had[partition]]
            assert [(b.base_offset, b.records, b.codec, b.size) for b in copied[partition]] == shape
        assert codec in {b.codec for bs in copied.values() for b in bs}
    assert any(
        "past the recorded position are verified copies" in line for line in log.splitlines()
    ), "no kill left batches past the recorded position"
