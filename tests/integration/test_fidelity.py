"""Record fidelity of the copy on real clusters and a real Spark.

Each test runs a standalone driver in the test process (the driver's own composition
root, on the session's Spark) for flow ``primary->backup`` and compares the full content
of every source partition (key, value, headers, timestamp, order) with its remote twin.
``test_copier.py`` covers the ordinary record shapes; these cover what makes offsets or
bytes unusual: log-append timestamps, compaction gaps, transactions, records near the
size limit, a record the target refuses, empty partitions and a restart; and compressed
topics, whose copies keep the source's codec on the target's log (read there batch by
batch, not from a config).
"""

from __future__ import annotations

import bisect
import json
import random
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from srm_common.adapters.flow_offsets import FlowOffsets
from srm_common.config import FlowConfig, load_config
from srm_common.domain.records import OffsetSync
from srm_driver.kafka_admin import admin_client, partition_offsets
from srm_driver.topic_sync import TopicSync
from srm_harness.clients import admin, broker_setting, consume_all, end_offsets, produce
from srm_harness.compare import content, copied
from srm_harness.control import write_config
from srm_harness.log_batches import (
    WORTH_COMPRESSING,
    codec_share,
    data_codecs,
    log_batches,
    log_bytes,
)
from srm_harness.records import RECENT_MS, Record
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SYNCS_TOPIC = "mm2-offset-syncs.backup.internal"  # on primary (location "source")


# --- helpers ------------------------------------------------------------------------


def _config(kafka, tmp_path: Path, topics: Sequence[str], **flow_keys: object) -> Path:  # type: ignore[no-untyped-def]
    return write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {"enabled": True, "topics": list(topics), **flow_keys},
            "backup->primary": {"enabled": False, "emit.heartbeats.enabled": False},
        },
        replication={"emit.heartbeats.enabled": False},
    )


def _flow(config_path: Path) -> FlowConfig:
    return load_config(config_path).flow("primary", "backup")


def _copied(kafka, topic: str, remote: str, timeout: float = 90) -> None:  # type: ignore[no-untyped-def]
    wait_until(
        lambda: copied(kafka["primary"], topic, kafka["backup"], remote),
        timeout,
        f"{topic} is copied to {remote}",
        step=0.5,
    )


def _sync_remote(kafka, flow: FlowConfig, topics: Mapping[str, int]) -> list[str]:  # type: ignore[no-untyped-def]
    """Create the remote topics as the driver does (source configs copied)."""
    source, target = admin_client(flow.source_admin), admin_client(flow.target_admin)
    sync = TopicSync(flow, source, target)
    changes = sync.ensure_remote_topics(topics)
    for topic in topics:
        kafka.created.append(("backup", sync.remote_topic(topic)))
    wait_until(
        lambda: all(
            len(end_offsets(kafka["backup"], sync.remote_topic(t))) == n for t, n in topics.items()
        ),
        30,
        "remote topics show every partition",
    )
    return changes


def _assert_copied(kafka, topic: str, remote: str) -> dict[int, list[Record]]:  # type: ignore[no-untyped-def]
    """Every partition of the remote topic equals its source partition (read_committed)."""
    source = consume_all(kafka["primary"], topic)
    target = consume_all(kafka["backup"], remote, isolation_level="read_uncommitted")
    assert sorted(target) == sorted(source)
    for partition, records in source.items():
        assert content(target[partition]) == content(records), f"partition {partition}"
    return source


def _offset_syncs(kafka, topic: str) -> dict[int, set[tuple[int, int]]]:  # type: ignore[no-untyped-def]
    """Every (upstream, downstream) pair written for ``topic``, per partition."""
    found: dict[int, set[tuple[int, int]]] = {}
    for records in consume_all(kafka["primary"], SYNCS_TOPIC).values():
        for record in records:
            sync = OffsetSync.decode(record.key, record.value)
            if sync.topic == topic:
                found.setdefault(sync.partition, set()).add(
                    (sync.upstream_offset, sync.downstream_offset)
                )
    return found


def _assert_syncs_exact(source: Sequence[Record], syncs: set[tuple[int, int]]) -> int:
    """The syncs of a partition copied from its start to a fresh remote partition give the
    exact (upstream, downstream) pair of every record; returns how many upstream gaps."""
    pairs = [(record.offset, down) for down, record in enumerate(source)]
    truth = dict(pairs)
    wrong = sorted((up, down) for up, down in syncs if truth.get(up) != down)
    assert not wrong, f"syncs that name no copied record: {wrong[:5]}"
    gaps = [(a, b) for a, b in zip(pairs, pairs[1:], strict=False) if b[0] != a[0] + 1]
    for before, after in gaps:
        assert before in syncs and after in syncs, f"upstream gap {before} -> {after} not synced"
    ordered = sorted(syncs)
    uppers = [up for up, _ in ordered]
    for up, down in pairs:
        index = bisect.bisect_right(uppers, up) - 1
        assert index >= 0, f"no sync at or before upstream {up}"
        sync_up, sync_down = ordered[index]
        assert sync_down + (up - sync_up) == down, f"upstream {up} translates wrongly"
    return len(gaps)


def _assert_translation_exact(
    config_path: Path, topic: str, source: Mapping[int, Sequence[Record]], ends: Mapping[int, int]
) -> None:
    """Every group offset from 0 to past the end translates to the truth read from both
    real topics: the remote offset of the copy of the first source record at or after it
    (the copy is in order from a fresh remote partition, so the k-th record is at k);
    failback maps each remote offset to a source offset with no record between it and
    the truth. Nothing may be declined: every sync is there."""
    offsets = FlowOffsets(_flow(config_path))
    try:
        offsets.refresh()
        for partition, records in source.items():
            ups = [r.offset for r in records]
            assert all(up is not None for up in ups)
            end = ends[partition]
            for c in range(0, end + 1):
                truth = bisect.bisect_left(ups, c)  # the index of the next record = its copy
                got = offsets.forward(topic, partition, c)
                assert got.offset == truth, f"{topic}-{partition} at {c}: {got} != {truth}"
            for down in range(0, len(ups) + 1):
                truth_up = ups[down] if down < len(ups) else end
                back = offsets.backward(topic, partition, down)
                assert back.offset is not None, f"{topic}-{partition} back {down}: {back.reason}"
                low, high = sorted((back.offset, truth_up))
                assert not [u for u in ups if low <= u < high], (partition, down, back, truth_up)
    finally:
        offsets.close()


def _stable(bootstrap: str, topic: str, partitions: int) -> bool:
    """No open transaction: every last stable offset is at the high watermark."""
    client = admin(bootstrap)
    wanted = [(topic, p) for p in range(partitions)]
    committed = partition_offsets(client, wanted, read_committed=True)
    uncommitted = partition_offsets(client, wanted, read_committed=False)
    return all(committed[tp].end == uncommitted[tp].end for tp in wanted)


def _topic_config(bootstrap: str, topic: str, name: str) -> str | None:
    client = admin(bootstrap)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = client.describe_configs([resource])[resource].result(30)
    return entries[name].value


# --- record shapes --------------------------------------------------------------------


def test_unusual_headers_keys_and_timestamps(kafka, run_driver, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    """What test_copier.py does not produce: empty header keys, empty vs null header values,
    non-ASCII names, hundreds of headers, a 64 KiB key, timestamps at 1 ms and in 2001."""
    keep = {"retention.ms": "-1"}  # or the broker's retention check deletes 1970's records
    topic = kafka.create_topic("primary", unique_name("shapes"), partitions=2, config=keep)
    remote = kafka.create_topic("backup", f"primary.{topic}", partitions=2, config=keep)
    records = [
        Record(b"k", b"v", (("", b"empty key"), ("e", b""), ("n", None), ("e", b"")), 1, 0),
        Record(None, None, (("ключ-ü-🔑", "wert ✓".encode()),), 2, 0),
        Record(b"many", b"headers", tuple((f"h{i % 7}", bytes([i])) for i in range(200)), 3, 1),
        Record(bytes(range(256)) * 256, b"", (), 1_000_000_000_000, 1),
        Record(b"", None, (("", None),), 1_000_000_000_000, 1),
    ]
    produce(kafka["primary"], topic, records)
    driver = run_driver(_config(kafka, tmp_path, [topic]))
    _copied(kafka, topic, remote)
    driver.stop()
    source = _assert_copied(kafka, topic, remote)
    assert [r.timestamp_ms for r in source[0]] == [1, 2]  # the broker kept the CreateTimes
    assert sum(len(rs) for rs in source.values()) == len(records)


def test_log_append_time_source_keeps_the_source_timestamps(
    kafka, run_driver, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    """The copy carries the source broker's log-append times, and the remote topic (created
    as the driver does) stays CreateTime, so the target does not stamp its own times."""
    topic = kafka.create_topic(
        "primary",
        unique_name("appendtime"),
        partitions=2,
        config={"message.timestamp.type": "LogAppendTime"},
    )
    config = _config(kafka, tmp_path, [topic])
    _sync_remote(kafka, _flow(config), {topic: 2})
    remote = f"primary.{topic}"
    assert _topic_config(kafka["backup"], remote, "message.timestamp.type") == "CreateTime"
    created = 1_234_567_890_000
    for round_ in range(3):  # three produce calls: distinct append times
        produce(
            kafka["primary"],
            topic,
            [
                Record(f"k{i}".encode(), f"{round_}-{i}".encode(), (), created, i % 2)
                for i in range(20)
            ],
        )
        time.sleep(0.05)
    before_copy = int(time.time() * 1000)
    time.sleep(0.05)  # any time the target would stamp is later than every source time
    run_driver(config)
    _copied(kafka, topic, remote)
    source = _assert_copied(kafka, topic, remote)
    stamps = {r.timestamp_ms for rs in source.values() for r in rs}
    assert created not in stamps
    assert all(stamp is not None and stamp < before_copy for stamp in stamps)


# --- compaction gaps and offset syncs ----------------------------------------------------


@pytest.mark.parametrize("codec", [None, "zstd"])
def test_compacted_source_with_offset_gaps_and_exact_offset_syncs(
    kafka, run_driver, tmp_path, unique_name, codec
):  # type: ignore[no-untyped-def]
    """With ``codec``, the gaps are inside compressed batches (the log cleaner keeps a
    batch's codec), and the copy is compressed with it too."""
    produced_with = {"compression.type": codec, "linger.ms": 50} if codec else None
    topic = kafka.create_topic(
        "primary",
        unique_name("compacted"),
        partitions=2,
        config={
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "100",
        },
    )
    # Plain remote topic: compacting the copy too would make it differ from the source.
    remote = kafka.create_topic("backup", f"primary.{topic}", partitions=2)
    rng = random.Random(7)
    keys_written: dict[int, set[bytes]] = {0: set(), 1: set()}
    for round_ in range(8):  # one segment per round (segment.ms=100 rolls on the next append)
        batch = []
        for i in range(50):
            partition = i % 2
            key = f"key-{rng.randrange(30)}".encode()  # survivors end up scattered
            keys_written[partition].add(key)
            headers = (("round", bytes([round_])),)
            batch.append(Record(key, f"r{round_}-{i}".encode(), headers, None, partition))
        produce(kafka["primary"], topic, batch, config=produced_with)
        time.sleep(0.2)
    # One last record per partition rolls the previous segment, so everything before it
    # can be cleaned; the active segment (this record alone) never is.
    rolls = [Record(b"roll", b"", (), None, p) for p in (0, 1)]
    produce(kafka["primary"], topic, rolls, config=produced_with)
    cleaned = {p: len(keys) + 1 for p, keys in keys_written.items()}

    def compacted() -> bool:
        records = consume_all(kafka["primary"], topic)
        return {p: len(rs) for p, rs in records.items()} == cleaned

    # The cleaner looks for a log to compact every second while this test waits for it,
    # not every 15 s (Kafka's default, which cost up to 30 s here: two looks); the
    # broker's own setting is back before the copy starts.
    with broker_setting(kafka["primary"], "log.cleaner.backoff.ms", "1000"):
        wait_until(compacted, 120, "the log cleaner compacts the source", step=1)
    ends = end_offsets(kafka["primary"], topic)
    assert all(ends[p] == 201 for p in (0, 1)) and all(n < 40 for n in cleaned.values())

    # A reservation of 10 offsets: gaps wider than that must not stop the copy. (Not with
    # a codec: copies of at most 10 offsets make batches too small to show their codec.)
    window = {} if codec else {"srm.batch.max.records": 10}
    config = _config(kafka, tmp_path, [topic], **window)
    driver = run_driver(config)
    _copied(kafka, topic, remote)
    driver.stop()
    source = _assert_copied(kafka, topic, remote)
    assert end_offsets(kafka["backup"], remote) == cleaned  # no gaps downstream

    syncs = _offset_syncs(kafka, topic)
    for partition in (0, 1):
        gaps = _assert_syncs_exact(source[partition], syncs[partition])
        assert gaps >= 5, f"partition {partition}: compaction left only {gaps} gaps"
    _assert_translation_exact(config, topic, source, ends)
    if codec:
        cleaned_batches = log_batches(kafka["primary"], topic)
        holes = [
            b for bs in cleaned_batches.values() for b in bs
            if b.records > 1 and b.next_offset - b.base_offset > b.records
        ]  # fmt: skip
        assert holes and {b.codec for b in holes} == {codec}, "gaps inside compressed batches"
        # The batch copy rebuilds each batch with holes as batches of its runs (most of a
        # few records) with its codec, where compressing makes them smaller (a run too
        # short to gain goes uncompressed, as a producer's would), and passes the others.
        codecs = data_codecs(log_batches(kafka["backup"], remote))
        assert codec in codecs and codecs <= {codec, "none"}, f"the copy's codecs: {codecs}"


# --- compressed topics ------------------------------------------------------------------


def _json_records(count: int, partitions: int, seed: int) -> list[Record]:
    """Orders as a JSON API would write them: compressible, as real topics are."""
    rng = random.Random(seed)
    return [
        Record(
            f"order-{i % 500}".encode(),
            json.dumps(
                {
                    "id": i,
                    "customer": f"customer-{rng.randrange(2000)}",
                    "items": [
                        {"sku": f"sku-{rng.randrange(300)}", "qty": rng.randrange(1, 5)}
                        for _ in range(rng.randrange(1, 4))
                    ],
                    "status": rng.choice(["new", "paid", "shipped"]),
                }
            ).encode(),
            (("trace", f"{seed}-{i}".encode()),) if i % 3 else (),
            RECENT_MS + i,
            i % partitions,
        )
        for i in range(count)
    ]


def test_zstd_and_lz4_topics_keep_their_codec_and_every_record(
    kafka, run_driver, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    """Topics at ``compression.type=producer`` (Kafka's default) written by zstd and lz4
    producers: the remote topics hold every record (keys, values, headers, timestamps, at
    the same offsets, with exact offset syncs), in batches of the same codec, in about
    as many bytes as the source."""
    topics = {}
    for seed, codec in enumerate(("zstd", "lz4")):
        topic = kafka.create_topic("primary", unique_name(codec), partitions=2)
        kafka.created.append(("backup", f"primary.{topic}"))
        produce(
            kafka["primary"],
            topic,
            _json_records(4000, 2, seed),
            config={"compression.type": codec, "linger.ms": 100, "batch.size": 1_000_000},
        )
        topics[codec] = topic
    driver = run_driver(_config(kafka, tmp_path, list(topics.values())))
    for topic in topics.values():
        _copied(kafka, topic, f"primary.{topic}")
    driver.stop()
    for codec, topic in topics.items():
        remote = f"primary.{topic}"
        source = _assert_copied(kafka, topic, remote)
        target = consume_all(kafka["backup"], remote, isolation_level="read_uncommitted")
        for partition, records in source.items():
            assert [r.offset for r in target[partition]] == [r.offset for r in records]
        syncs = _offset_syncs(kafka, topic)
        for partition in (0, 1):
            assert _assert_syncs_exact(source[partition], syncs[partition]) == 0
        source_log = log_batches(kafka["primary"], topic)
        target_log = log_batches(kafka["backup"], remote)
        assert data_codecs(source_log, WORTH_COMPRESSING) == {codec}
        # (A batch of a few records stays uncompressed when compressing would not shrink
        # it: srm_harness.log_batches.WORTH_COMPRESSING.)
        codecs = data_codecs(target_log, WORTH_COMPRESSING)
        assert codecs == {codec}, f"{remote} batches: {codecs}"
        assert codec_share(target_log, codec) > 0.9
        assert _topic_config(kafka["backup"], remote, "compression.type") == "producer"
        source_bytes, target_bytes = log_bytes(source_log), log_bytes(target_log)
        print(
            f"\n{codec}: source {source_bytes} bytes in {sum(map(len, source_log.values()))}"
            f" batches, target {target_bytes} bytes in {sum(map(len, target_log.values()))}"
        )
        # Uncompressed, these records take about 8x the source's bytes.
        assert target_bytes < 2 * source_bytes


# --- transactions -----------------------------------------------------------------------


def test_transactions_only_committed_records_are_copied_once(
    kafka, run_driver, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    topic = kafka.create_topic("primary", unique_name("txn"), partitions=2)
    remote = kafka.create_topic("backup", f"primary.{topic}", partitions=2)
    txn = Producer(
        {
            "bootstrap.servers": kafka["primary"],
            "transactional.id": unique_name("txn-producer"),
            "linger.ms": 5,
        }
    )
    txn.init_transactions(60)

    def transaction(label: str, count: int, *, commit: bool | None) -> None:
        txn.begin_transaction()
        for i in range(count):
            txn.produce(
                topic,
                key=f"{label}-{i}".encode(),
                value=f"{label} {i}".encode(),
                headers=[("kind", label.encode())],
                partition=i % 2,
            )
        txn.flush(30)
        if commit is True:
            txn.commit_transaction(60)
        elif commit is False:
            txn.abort_transaction(60)

    plain = [
        Record(f"plain-{i}".encode(), f"plain {i}".encode(), (), None, i % 2) for i in range(6)
    ]
    for n in range(6):
        transaction(f"{'committed' if n % 2 == 0 else 'aborted'}{n}", 10 + n, commit=n % 2 == 0)
        produce(kafka["primary"], topic, plain[n : n + 1])
    transaction("aborted-last", 4, commit=False)  # ranges end on abort markers
    transaction("open", 8, commit=None)  # still open while the driver copies
    produce(kafka["primary"], topic, [Record(b"after-open", b"waits", (), None, 0)])

    config = _config(kafka, tmp_path, [topic], **{"srm.batch.max.records": 25})
    driver = run_driver(config)
    _copied(kafka, topic, remote)
    time.sleep(2)  # and nothing past the last stable offset comes later
    copied = consume_all(kafka["backup"], remote, isolation_level="read_uncommitted")
    values = [r.value for rs in copied.values() for r in rs]
    assert values and not any(b"aborted" in v or b"open" in v or b"waits" in v for v in values)

    txn.commit_transaction(60)
    # The commit markers are written after commit_transaction returns: wait for them.
    wait_until(lambda: _stable(kafka["primary"], topic, 2), 30, "the last stable offset moves on")
    _copied(kafka, topic, remote)
    driver.stop()
    source = _assert_copied(kafka, topic, remote)
    copied = consume_all(kafka["backup"], remote, isolation_level="read_uncommitted")
    values = sorted(r.value for rs in copied.values() for r in rs)
    expected = sorted(r.value for rs in source.values() for r in rs)
    assert values == expected and len(values) == len(set(values))  # each exactly once
    assert not any(b"aborted" in v for v in values)
    assert len(values) == sum(10 + n for n in (0, 2, 4)) + 6 + 8 + 1

    syncs = _offset_syncs(kafka, topic)  # markers and aborted records are upstream gaps
    for partition in (0, 1):
        assert _assert_syncs_exact(source[partition], syncs[partition]) >= 3
    _assert_translation_exact(config, topic, source, end_offsets(kafka["primary"], topic))


# --- size limits --------------------------------------------------------------------------


def test_records_near_the_default_size_limit(kafka, run_driver, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    """~900 KiB values, and one just under the broker's default message.max.bytes
    (1048588), copy with every topic at its default size settings."""
    topic = kafka.create_topic("primary", unique_name("large"), partitions=2)
    config = _config(kafka, tmp_path, [topic])
    _sync_remote(kafka, _flow(config), {topic: 2})
    remote = f"primary.{topic}"
    big = 900 * 1024
    records = [
        Record(f"big-{i}".encode(), bytes([i]) * big, (("n", str(i).encode()),), None, i % 2)
        for i in range(6)
    ]
    records.insert(3, Record(b"small", b"between", (), None, 0))
    records.append(Record(b"edge", b"e" * 1_048_000, (), None, 1))
    produce(kafka["primary"], topic, records, config={"message.max.bytes": 1_048_588})
    run_driver(config)
    _copied(kafka, topic, remote)
    source = _assert_copied(kafka, topic, remote)
    assert sum(len(rs) for rs in source.values()) == len(records)


def test_records_above_the_default_limit_follow_the_topic_setting(
    kafka, run_driver, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    """A 2 MiB record on a topic allowing 3 MiB: the remote topic inherits
    max.message.bytes from the source, and the copy producer's requests are large enough."""
    limit = 3 * 1024 * 1024
    topic = kafka.create_topic(
        "primary", unique_name("huge"), partitions=1, config={"max.message.bytes": str(limit)}
    )
    config = _config(kafka, tmp_path, [topic])
    _sync_remote(kafka, _flow(config), {topic: 1})
    remote = f"primary.{topic}"
    assert _topic_config(kafka["backup"], remote, "max.message.bytes") == str(limit)
    records = [
        Record(b"huge", b"h" * (2 * 1024 * 1024), (), None, 0),
        Record(b"k", b"v", (), None, 0),
    ]
    produce(kafka["primary"], topic, records, config={"message.max.bytes": limit})
    run_driver(config)
    _copied(kafka, topic, remote)
    _assert_copied(kafka, topic, remote)


def test_records_of_8_and_20_mib_copy_with_no_setting_by_hand(
    kafka, run_driver, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    """An 8 MiB and a 20 MiB record on a topic allowing 21 MiB, with small records around
    them, and the driver's defaults (its producer's requests are 16 MiB): the driver sizes
    the copy's requests and fetches from the source topic's max.message.bytes, the remote
    topic it creates inherits the limit, and both records arrive whole, in place."""
    limit = 21 * 1024 * 1024
    topic = kafka.create_topic(
        "primary", unique_name("large"), partitions=2, config={"max.message.bytes": str(limit)}
    )
    remote = f"primary.{topic}"
    records = [
        Record(b"before", b"s", (("h", b"1"),), None, 0),
        Record(b"eight", bytes(range(256)) * (8 * 4096), (("size", b"8MiB"),), None, 0),
        Record(b"after", b"t", (), None, 0),
        Record(b"before", b"u", (), None, 1),
        Record(b"twenty", bytes(range(255, -1, -1)) * (20 * 4096), (), None, 1),
        Record(b"after", b"w", (("h", b"2"),), None, 1),
    ]
    produce(kafka["primary"], topic, records, config={"message.max.bytes": limit})
    driver = run_driver(_config(kafka, tmp_path, [topic]))
    _copied(kafka, topic, remote, timeout=120)
    driver.stop()
    assert _topic_config(kafka["backup"], remote, "max.message.bytes") == str(limit)
    source = _assert_copied(kafka, topic, remote)
    assert [len(r.value) for r in source[0]] == [1, 8 * 1024 * 1024, 1]
    assert [len(r.value) for r in source[1]] == [1, 20 * 1024 * 1024, 1]
    assert end_offsets(kafka["backup"], remote) == {0: 3, 1: 3}


@pytest.mark.parametrize("batches", [True, False], ids=["batch-copy", "record-copy"])
def test_a_refused_record_is_retried_and_copied_once_when_the_target_accepts_it(
    kafka, run_driver, tmp_path, unique_name, batches
):  # type: ignore[no-untyped-def]
    """The remote topic refuses a 2 MiB record (max.message.bytes at its default): its
    partition stops at the record, tries again with a backoff, and the other partition
    copies on. Once the operator raises the limit, the rest is copied, nothing twice. The
    batch copy sends the refused batch's records again one per batch, so it too copies
    the records before the big one and stops at it."""
    limit = 3 * 1024 * 1024
    topic = kafka.create_topic(
        "primary", unique_name("retry"), partitions=2, config={"max.message.bytes": str(limit)}
    )
    remote = kafka.create_topic("backup", f"primary.{topic}", partitions=2)
    records = [
        *[Record(f"before-{i}".encode(), b"x", (), None, 0) for i in range(5)],
        Record(b"big", b"b" * (2 * 1024 * 1024), (), None, 0),
        *[Record(f"after-{i}".encode(), b"x", (), None, 0) for i in range(5)],
        *[Record(f"other-{i}".encode(), b"y", (), None, 1) for i in range(20)],
    ]
    produce(kafka["primary"], topic, records, config={"message.max.bytes": limit})
    driver = run_driver(
        _config(
            kafka,
            tmp_path,
            [topic],
            **{
                "srm.poison.max.tries": 1000,
                "config.properties.exclude": "max.message.bytes",
                "srm.copy.batches": batches,
            },
        )
    )
    wait_until(
        lambda: end_offsets(kafka["backup"], remote) == {0: 5, 1: 20},
        60,
        "the partition without the big record is copied; the other up to it",
    )
    wait_until(
        lambda: any(
            # The batch copy (the default) names the broker's error, the record copy
            # librdkafka's.
            "MESSAGE_TOO_LARGE" in e or "MSG_SIZE_TOO_LARGE" in e
            for e in driver.status()["copy"]["errors"]
        ),
        30,
        "the flow's status names the refused record",
    )
    wait_until(
        lambda: any(
            "refused a record whose value is 2,097,152 bytes" in e
            for e in driver.status()["copy"]["errors"]
        ),
        30,
        "the flow's status says how large the refused record is",
    )
    client = admin(kafka["backup"])
    raise_limit = ConfigResource(
        ResourceType.TOPIC,
        remote,
        incremental_configs=[
            ConfigEntry(
                "max.message.bytes", str(limit), incremental_operation=AlterConfigOpType.SET
            )
        ],
    )
    for future in client.incremental_alter_configs([raise_limit]).values():
        future.result(30)
    _copied(kafka, topic, remote, timeout=120)
    driver.stop()
    _assert_copied(kafka, topic, remote)
    assert end_offsets(kafka["backup"], remote) == {0: 11, 1: 20}


# --- empty partitions -----------------------------------------------------------------------


def test_empty_topic_and_partitions_copy_nothing(kafka, run_driver, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    empty = kafka.create_topic("primary", unique_name("empty"), partitions=3)
    mixed = kafka.create_topic("primary", unique_name("mixed"), partitions=3)
    empty_remote = kafka.create_topic("backup", f"primary.{empty}", partitions=3)
    mixed_remote = kafka.create_topic("backup", f"primary.{mixed}", partitions=3)
    # Partition 1 of "mixed" has records; partition 2 had some, all deleted since.
    produce(
        kafka["primary"],
        mixed,
        [Record(f"k{i}".encode(), b"v", (), None, 1 if i < 5 else 2) for i in range(9)],
    )
    client = admin(kafka["primary"])
    deleted = client.delete_records([TopicPartition(mixed, 2, 4)])  # up to the end offset
    for future in deleted.values():
        future.result(30)

    driver = run_driver(_config(kafka, tmp_path, [empty, mixed]))
    _copied(kafka, mixed, mixed_remote)
    # (Other tests' heartbeats topic on the shared cluster may be copied too.)
    wait_until(
        lambda: driver.status()["copy"]["by_status"].get("running", 0) >= 6,
        30,
        "all six partitions copy",
    )
    assert not driver.status()["copy"]["halted"]
    driver.stop()
    assert end_offsets(kafka["backup"], empty_remote) == {0: 0, 1: 0, 2: 0}
    assert end_offsets(kafka["backup"], mixed_remote) == {0: 0, 1: 5, 2: 0}
    _assert_copied(kafka, mixed, mixed_remote)


# --- restart ---------------------------------------------------------------------------------


def test_a_restarted_driver_resumes_where_the_last_one_stopped(
    kafka, run_driver, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    topic = kafka.create_topic("primary", unique_name("resume"), partitions=2)
    remote = kafka.create_topic("backup", f"primary.{topic}", partitions=2)
    records = [
        Record(f"k{i}".encode(), f"v{i}".encode(), (("seq", str(i).encode()),), None, i % 2)
        for i in range(300)
    ]
    produce(kafka["primary"], topic, records)
    config = _config(kafka, tmp_path, [topic], **{"srm.batch.max.records": 40})
    first = run_driver(config)
    _copied(kafka, topic, remote)
    first.stop()
    assert end_offsets(kafka["backup"], remote) == {0: 150, 1: 150}

    produce(kafka["primary"], topic, records[:10])  # a second start copies only those
    second = run_driver(config)
    _copied(kafka, topic, remote)
    second.stop()
    _assert_copied(kafka, topic, remote)
    assert end_offsets(kafka["backup"], remote) == {0: 155, 1: 155}
