"""Our mirror client against MM2's own Java client (``MirrorClient``, ``RemoteClusterUtils``).

Both read the same real cluster: checkpoints written by our codec, then checkpoints written
by a real MirrorMaker 2. Every alias and topic carries a per-test token, so tests running
beside these on the shared clusters neither disturb nor are disturbed: comparisons of
cluster-wide answers (all heartbeat topics, all upstream clusters) keep the tokened names.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Protocol

import pytest
from confluent_kafka import Consumer, TopicPartition
from srm_common.adapters.mirror_client import ClusterUnavailableError, MirrorClient
from srm_common.domain.records import Checkpoint
from srm_harness.clients import create_topic, list_topics, produce
from srm_harness.mirrormaker import MirrorMaker2
from srm_harness.records import Record

pytestmark = pytest.mark.integration


class Clusters(Protocol):
    """The ``kafka`` fixture (tests/conftest.py): bootstrap by alias, topics it deletes."""

    created: list[tuple[str, str]]

    def __getitem__(self, alias: str) -> str: ...

    def create_topic(
        self,
        alias: str,
        name: str,
        *,
        partitions: int = 1,
        config: Mapping[str, str] | None = None,
    ) -> str: ...


JavaAnswers = dict[str, object]
JavaClient = Callable[[dict[str, object]], JavaAnswers]  # the java_client fixture (conftest)
Offsets = dict[tuple[str, int], int]


@pytest.fixture
def token() -> str:
    """Unique in every alias and topic name a test makes (aliases hold no separator)."""
    return uuid.uuid4().hex[:8]


def _java_offsets(answers: JavaAnswers, alias: str, group: str) -> Offsets:
    translations = answers["translate_offsets"]
    assert isinstance(translations, list)
    (entry,) = [t for t in translations if t["remote_alias"] == alias and t["group"] == group]
    return {(o["topic"], o["partition"]): o["offset"] for o in entry["offsets"]}


def _java_metadata(answers: JavaAnswers, alias: str, group: str) -> dict[tuple[str, int], str]:
    translations = answers["translate_offsets"]
    assert isinstance(translations, list)
    (entry,) = [t for t in translations if t["remote_alias"] == alias and t["group"] == group]
    return {(o["topic"], o["partition"]): o["metadata"] for o in entry["offsets"]}


def _tokened(names: object, token: str) -> set[str]:
    assert isinstance(names, list | set)
    return {name for name in names if token in name}


def _record(checkpoint: Checkpoint) -> Record:
    return Record(key=checkpoint.encode_key(), value=checkpoint.encode_value())


def test_java_client_agrees_with_ours_when_reading_our_checkpoints_and_topics(
    kafka: Clusters, java_client: JavaClient, token: str
) -> None:
    backup = kafka["backup"]
    up, dr, nowhere = f"mc{token}", f"dr{token}", f"nowhere{token}"
    checkpoints_topic = kafka.create_topic(
        "backup", f"{up}.checkpoints.internal", config={"cleanup.policy": "compact"}
    )
    for name in (f"{up}.heartbeats", f"{dr}.{up}.heartbeats", f"{up}.{dr}.{up}.heartbeats"):
        kafka.create_topic("backup", name)
    orders = kafka.create_topic("backup", f"{up}.orders", partitions=2)
    kafka.create_topic("backup", f"{dr}.{up}.orders")
    kafka.create_topic("backup", f"local-{token}")
    if "heartbeats" not in list_topics(backup):
        # Shared by every replicator on this cluster: made if missing, never deleted.
        create_topic(backup, "heartbeats")

    g1, g2, g3 = (f"group{i}-{token}" for i in (1, 2, 3))
    final = {
        (g1, orders, 0): Checkpoint(g1, orders, 0, 130, 55, "g1 latest"),
        (g1, orders, 1): Checkpoint(g1, orders, 1, 7, 6),
        (g2, orders, 0): Checkpoint(g2, orders, 0, 12, 11, "ü metadata"),
        (g2, f"{dr}.{up}.orders", 0): Checkpoint(g2, f"{dr}.{up}.orders", 0, 3, 3),
    }
    records = [
        _record(Checkpoint(g1, orders, 0, 100, 40, "g1 first")),
        _record(Checkpoint(g2, orders, 0, 5, 4)),
        _record(final[(g1, orders, 1)]),
        Record(key=b"\x00\x05gr", value=b"\x00\x00\x00"),  # truncated key and value
        _record(Checkpoint(g1, orders, 0, 120, 50)),
        _record(final[(g2, orders, 0)]),
        Record(key=final[(g1, orders, 0)].encode_key(), value=b"\x00\x00\x00\x00\x00\x00"),
        _record(final[(g1, orders, 0)]),
        _record(final[(g2, f"{dr}.{up}.orders", 0)]),
    ]
    produce(backup, checkpoints_topic, records)

    java = java_client(
        {
            "properties": {"bootstrap.servers": backup},
            "timeout_ms": 30000,
            "hops": [up, dr, nowhere],
            "sources": [up, dr, nowhere],
            "translate": [{"remote_alias": up, "group": g} for g in (g1, g2, g3)],
        }
    )
    client = MirrorClient({"bootstrap.servers": backup}, cluster="backup")

    heartbeats = {f"{up}.heartbeats", f"{dr}.{up}.heartbeats", f"{up}.{dr}.{up}.heartbeats"}
    ours = client.heartbeat_topics()
    assert _tokened(java["heartbeat_topics"], token) == _tokened(ours, token) == heartbeats, (
        "MM2 and we must find the same heartbeat topics"
    )
    java_heartbeats = java["heartbeat_topics"]
    assert isinstance(java_heartbeats, list)
    assert "heartbeats" in ours and "heartbeats" in java_heartbeats, (
        "the local heartbeats topic is a heartbeat topic for both"
    )
    assert (
        _tokened(java["checkpoint_topics"], token)
        == _tokened(client.checkpoint_topics(), token)
        == {checkpoints_topic}
    ), "MM2 and we must find the same checkpoints topics"
    assert (
        _tokened(java["upstream_clusters"], token)
        == _tokened(client.upstream_clusters(), token)
        == {up, dr}
    ), f"both must see {up} and {dr} upstream (the loop {up}.{dr}.{up} stops at {up})"
    assert _tokened(java["remote_topics"], token) == _tokened(client.remote_topics(), token), (
        "MM2 and we must list the same remote topics"
    )
    by_source = java["remote_topics_by_source"]
    assert isinstance(by_source, dict)
    for source in (up, dr, nowhere):
        assert set(by_source[source]) == client.remote_topics(source), (
            f"MM2 and we must agree on the topics copied directly from {source}"
        )
    assert client.remote_topics(up) == {orders, *heartbeats - {f"{dr}.{up}.heartbeats"}}, (
        f"direct copies from {up}: its orders and the heartbeats it forwarded"
    )
    java_hops = java["replication_hops"]
    assert isinstance(java_hops, dict)
    for alias, expected in ((up, 1), (dr, 1), (nowhere, None)):
        ours_hops = client.replication_hops(alias)
        assert ours_hops == expected, f"{alias} is {expected} hop(s) away"
        assert java_hops[alias] == (-1 if ours_hops is None else ours_hops), (
            f"MM2 counts {java_hops[alias]} hop(s) from {alias}, we {ours_hops}"
        )

    for group in (g1, g2, g3):
        expected = {(t, p): c.downstream_offset for (g, t, p), c in final.items() if g == group}
        translated = client.translate_offsets(up, group)
        assert translated == expected, f"{group}: the latest readable checkpoint wins"
        assert _java_offsets(java, up, group) == translated, (
            f"RemoteClusterUtils.translateOffsets and ours disagree for {group}"
        )
    read = client.checkpoints(up)
    assert read == dict(sorted(final.items())), "checkpoints() keeps the latest per key"
    for group in (g1, g2):
        assert _java_metadata(java, up, group) == {
            (t, p): c.metadata for (g, t, p), c in read.items() if g == group
        }, f"MM2 and we must read the same commit metadata for {group}"


def test_missing_checkpoints_topic_means_no_checkpoints_when_mm2_never_ran(
    kafka: Clusters, token: str
) -> None:
    client = MirrorClient({"bootstrap.servers": kafka["backup"]}, cluster="backup")
    started = time.monotonic()
    assert client.translate_offsets(f"never{token}", "g", timeout_s=20) == {}, (
        "no checkpoints topic: nothing to translate"
    )
    assert client.checkpoints(f"never{token}") == {}, "no checkpoints topic: no checkpoints"
    assert time.monotonic() - started < 10, "a missing topic is answered at once, not waited for"


def test_unreachable_cluster_is_named_when_it_cannot_be_read() -> None:
    client = MirrorClient({"bootstrap.servers": "127.0.0.1:1"}, cluster="gone")
    with pytest.raises(ClusterUnavailableError, match=r"cluster 'gone' \(127\.0\.0\.1:1\)"):
        client.upstream_clusters(timeout_s=2)
    with pytest.raises(ClusterUnavailableError, match="is the cluster up"):
        client.translate_offsets("primary", "g", timeout_s=2)


# -- checkpoints written by a real MirrorMaker 2 ------------------------------------------


def _mm2_properties(
    source: str, target: str, primary: str, backup: str, topic: str, group: str
) -> dict[str, str]:
    flow = f"{source}->{target}"
    return {
        "clusters": f"{source}, {target}",
        f"{source}.bootstrap.servers": primary,
        f"{target}.bootstrap.servers": backup,
        f"{flow}.enabled": "true",
        f"{flow}.topics": topic,
        f"{flow}.groups": group,
        f"{target}->{source}.enabled": "false",
        # No heartbeats into, nor copies of, the shared `heartbeats` topics: other tests
        # reading the clusters' upstream clusters must not see this test's aliases.
        "emit.heartbeats.enabled": "false",
        "heartbeats.replication.enabled": "false",
        "emit.checkpoints.interval.seconds": "1",
        "refresh.groups.interval.seconds": "1",
        "refresh.topics.interval.seconds": "1",
        "sync.group.offsets.enabled": "false",
        "sync.topic.acls.enabled": "false",
        "tasks.max": "1",
        "replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "offset.flush.interval.ms": "1000",
    }


@pytest.fixture
def topics_with_token(kafka: Clusters, token: str) -> Iterator[None]:
    """Whatever MM2 made for this test's aliases (remote, internal and Connect topics) is
    deleted afterwards with the test's own topics."""
    yield
    for alias in ("primary", "backup"):
        for name in list_topics(kafka[alias]):
            if token in name and (alias, name) not in kafka.created:
                kafka.created.append((alias, name))


def _commit(bootstrap: str, group: str, offsets: list[TopicPartition]) -> None:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()


def test_java_client_agrees_with_ours_when_mirrormaker2_wrote_the_checkpoints(
    kafka: Clusters,
    java_client: JavaClient,
    token: str,
    tmp_path: Path,
    topics_with_token: None,
) -> None:
    primary, backup = kafka["primary"], kafka["backup"]
    source, target = f"mmp{token}", f"mmb{token}"
    topic = kafka.create_topic("primary", f"numbered-{token}", partitions=2)
    produce(
        primary,
        topic,
        [Record(key=b"%d" % i, value=b"%d" % i, partition=p) for p in (0, 1) for i in range(10)],
    )
    group = f"consumer-{token}"
    committed = {0: 4, 1: 10}  # part-way through partition 0, all of partition 1
    _commit(primary, group, [TopicPartition(topic, p, o) for p, o in committed.items()])

    properties = _mm2_properties(source, target, primary, backup, topic, group)
    client = MirrorClient({"bootstrap.servers": backup}, cluster="backup")
    remote = f"{source}.{topic}"

    mm2 = MirrorMaker2(tmp_path, properties, heap="256m").start()
    try:
        deadline = time.monotonic() + 150
        while True:
            assert mm2.alive(), f"MirrorMaker 2 exited with {mm2.returncode}\n{mm2.log_tail()}"
            read = client.checkpoints(source, {group}, timeout_s=10)
            if {(t, p) for _g, t, p in read} == {(remote, 0), (remote, 1)}:
                break
            assert time.monotonic() < deadline, (
                f"MirrorMaker 2 wrote no checkpoint of {group} for both partitions of"
                f" {remote} within 150 s (has {sorted(read)})\n{mm2.log_tail()}"
            )
            time.sleep(1)
    finally:
        mm2.stop(30)

    java = java_client(
        {
            "properties": {"bootstrap.servers": backup},
            "timeout_ms": 30000,
            "hops": [],
            "sources": [],
            "translate": [{"remote_alias": source, "group": group}],
        }
    )
    ours = client.translate_offsets(source, group)
    assert ours == _java_offsets(java, source, group), (
        "RemoteClusterUtils.translateOffsets and ours disagree on MM2's own checkpoints"
    )
    assert set(ours) == {(remote, 0), (remote, 1)}, f"MM2 checkpointed both partitions of {remote}"
    latest = client.checkpoints(source, {group})
    for (_g, _t, partition), checkpoint in latest.items():
        assert checkpoint.upstream_offset == committed[partition], (
            f"MM2's checkpoint of partition {partition} is for the committed offset"
        )
        assert 0 <= checkpoint.downstream_offset <= committed[partition], (
            "a translated offset never lands past the committed position (one copy, no gaps)"
        )
    assert _java_metadata(java, source, group) == {
        (t, p): c.metadata for (_g, t, p), c in latest.items()
    }, "MM2 and we read the same commit metadata"
