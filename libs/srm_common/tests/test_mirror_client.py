"""The pure parts of the mirror client: topic classification, hops, the checkpoint fold.

The same calls on real clusters, against MM2's own Java client, are in
``tests/integration/test_mirror_client.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from srm_common.adapters.mirror_client import MirrorClient
from srm_common.domain.mirror_topology import (
    checkpoint_topics_among,
    fold_checkpoints,
    heartbeat_topics_among,
    hops_to,
    offsets_of,
    remote_topics_among,
    replication_hops_among,
    sources_of,
    upstream_clusters_among,
)
from srm_common.domain.policy import DefaultReplicationPolicy, IdentityReplicationPolicy
from srm_common.domain.records import Checkpoint
from srm_common.errors import ConfigError

DEFAULT = DefaultReplicationPolicy()

# Cluster C fed by A -> B -> C and B -> C, as in the module's worked example.
TOPICS_OF_C = {
    "heartbeats",
    "B.heartbeats",
    "B.A.heartbeats",
    "orders",
    "B.orders",
    "B.A.orders",
    "B.checkpoints.internal",
    "A.checkpoints.internal",
    "mm2-offset-syncs.B.internal",
    "mm2-offsets.B.internal",
    "__consumer_offsets",
    "my-heartbeats",
}


def test_heartbeat_topics_are_those_of_every_hop_when_default_policy() -> None:
    assert heartbeat_topics_among(DEFAULT, TOPICS_OF_C) == {
        "heartbeats",
        "B.heartbeats",
        "B.A.heartbeats",
    }, "heartbeats, B.heartbeats and B.A.heartbeats are heartbeat topics; my-heartbeats is not"


def test_checkpoint_topics_are_one_per_remote_alias_when_default_policy() -> None:
    assert checkpoint_topics_among(DEFAULT, TOPICS_OF_C) == {
        "B.checkpoints.internal",
        "A.checkpoints.internal",
    }, "only <alias>.checkpoints.internal names are checkpoints topics"


def test_remote_topics_leave_out_internal_and_local_when_no_source_given() -> None:
    assert remote_topics_among(DEFAULT, TOPICS_OF_C) == {
        "B.heartbeats",
        "B.A.heartbeats",
        "B.orders",
        "B.A.orders",
    }, "remote topics have a source and are not internal (MM2 counts B.heartbeats too)"


def test_remote_topics_are_one_hop_only_when_source_given() -> None:
    assert remote_topics_among(DEFAULT, TOPICS_OF_C, "B") == {
        "B.heartbeats",
        "B.A.heartbeats",
        "B.orders",
        "B.A.orders",
    }, "every topic whose nearest source is B"
    assert remote_topics_among(DEFAULT, TOPICS_OF_C, "A") == set(), (
        "B.A.orders came through B: A is not its direct source"
    )


@pytest.mark.parametrize(
    ("topic", "sources"),
    [
        ("heartbeats", []),
        ("B.heartbeats", ["B"]),
        ("C.B.A.heartbeats", ["C", "B", "A"]),
        ("A.B.A.C.heartbeats", ["A", "B"]),
        ("A.A.heartbeats", ["A"]),
        (".heartbeats", [""]),
    ],
)
def test_sources_stop_at_a_repeated_alias_when_path_loops(topic: str, sources: list[str]) -> None:
    assert sources_of(DEFAULT, topic) == sources, (
        f"MM2 walks {topic!r} to the first repeated alias or a local name: {sources}"
    )


@pytest.mark.parametrize(
    ("topic", "alias", "hops"),
    [
        ("B.A.heartbeats", "A", 2),
        ("B.A.heartbeats", "B", 1),
        ("B.A.heartbeats", "C", None),
        ("heartbeats", "A", None),
        ("A.B.A.C.heartbeats", "C", None),
        ("A.B.A.C.heartbeats", "B", 2),
    ],
)
def test_hops_count_the_path_when_alias_is_on_it(topic: str, alias: str, hops: int | None) -> None:
    assert hops_to(DEFAULT, topic, alias) == hops, f"{alias} is {hops} hop(s) up {topic!r}"


def test_replication_hops_is_the_shortest_path_when_several_heartbeats_lead_here() -> None:
    topics = {"A.heartbeats", "B.A.heartbeats", "C.B.heartbeats", "B.orders"}
    assert replication_hops_among(DEFAULT, topics, "A") == 1, "A.heartbeats is 1 hop"
    assert replication_hops_among(DEFAULT, topics, "B") == 1, "B.A.heartbeats puts B 1 hop away"
    assert replication_hops_among(DEFAULT, topics, "X") is None, "no heartbeats came from X"
    assert replication_hops_among(DEFAULT, {"B.orders"}, "B") is None, (
        "only heartbeat topics count: B.orders does not prove a path"
    )


def test_upstream_clusters_are_every_alias_on_heartbeat_paths_when_multi_hop() -> None:
    assert upstream_clusters_among(DEFAULT, TOPICS_OF_C) == {"A", "B"}, (
        "B.A.heartbeats names A and B; remote data topics do not count"
    )
    assert upstream_clusters_among(DEFAULT, {"heartbeats", "orders"}) == set(), (
        "only the local heartbeats topic: no upstream cluster"
    )


def test_classification_uses_the_separator_when_policy_has_a_custom_one() -> None:
    policy = DefaultReplicationPolicy(separator="_")
    topics = {"B_A_heartbeats", "B_orders", "B_checkpoints_internal", "B.x"}
    assert upstream_clusters_among(policy, topics) == {"A", "B"}, "'_' separates aliases"
    assert replication_hops_among(policy, topics, "A") == 2, "B_A_heartbeats is 2 hops from A"
    assert checkpoint_topics_among(policy, topics) == {"B_checkpoints_internal"}, (
        "KIP-949: the checkpoints topic uses the separator"
    )
    assert remote_topics_among(policy, topics) == {"B_A_heartbeats", "B_orders"}, (
        "B.x has no '_' so it is local"
    )


def test_identity_policy_traces_heartbeats_only_when_names_are_kept() -> None:
    policy = IdentityReplicationPolicy(source_alias="A")
    topics = {"heartbeats", "B.A.heartbeats", "orders"}
    assert upstream_clusters_among(policy, topics) == {"A", "B"}, (
        "heartbeat names keep their prefixes under the identity policy"
    )
    assert replication_hops_among(policy, topics, "A") == 2, "B.A.heartbeats: A is 2 hops away"
    assert remote_topics_among(policy, topics, "A") == {"orders"}, (
        "with source.cluster.alias=A every kept name comes from A"
    )


class _EndlessPolicy(DefaultReplicationPolicy):
    """Broken: every name has a new source and a longer upstream name."""

    def topic_source(self, topic: str) -> str | None:
        return f"s{len(topic)}"

    def upstream_topic(self, topic: str) -> str | None:
        return topic + "x"


def test_a_policy_that_never_reaches_a_local_name_is_refused_when_walking() -> None:
    with pytest.raises(ConfigError, match="upstream_topic must reach a local name"):
        sources_of(_EndlessPolicy(), "heartbeats")


@given(st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), max_size=6, unique=True))
def test_hops_match_position_when_aliases_are_distinct(aliases: list[str]) -> None:
    topic = ".".join([*aliases, "heartbeats"])
    assert sources_of(DEFAULT, topic) == aliases, f"{topic!r} names {aliases}, nearest first"
    for index, alias in enumerate(aliases):
        assert replication_hops_among(DEFAULT, {topic}, alias) == index + 1, (
            f"{alias} is {index + 1} hop(s) up {topic!r}"
        )


# -- the checkpoint fold ----------------------------------------------------------------


def _record(checkpoint: Checkpoint) -> tuple[bytes | None, bytes | None]:
    return checkpoint.encode_key(), checkpoint.encode_value()


def test_last_checkpoint_wins_and_garbage_is_skipped_when_folding() -> None:
    old = Checkpoint("g", "B.orders", 0, 100, 40)
    new = Checkpoint("g", "B.orders", 0, 130, 55, "m")
    other = Checkpoint("h", "B.orders", 0, 10, 9)
    version_1 = bytes.fromhex("0001") + new.encode_value()[2:]
    records = [
        _record(old),
        _record(other),
        (b"\x00", b"\x00\x00"),  # truncated key and value
        _record(new),
        (new.encode_key(), None),  # a tombstone: MM2 never writes one
        (old.encode_key(), version_1),  # a layout this reader does not know
        (new.encode_key(), new.encode_value()[:-1]),  # metadata cut short
    ]
    fold = fold_checkpoints(records)
    assert fold.in_key_order() == {
        ("g", "B.orders", 0): new,
        ("h", "B.orders", 0): other,
    }, "the latest readable checkpoint per (group, topic, partition) wins"
    assert fold.skipped == 4, "the four unreadable records are skipped and counted"


def test_fold_keeps_only_asked_groups_when_groups_given() -> None:
    records = [
        _record(Checkpoint("g", "B.orders", 0, 1, 1)),
        _record(Checkpoint("h", "B.orders", 1, 2, 2)),
        _record(Checkpoint("k", "B.pay", 0, 3, 3)),
    ]
    fold = fold_checkpoints(records, ["h", "k"])
    assert sorted(fold.in_key_order()) == [("h", "B.orders", 1), ("k", "B.pay", 0)], (
        "group g was not asked for"
    )


def test_offsets_are_downstream_per_partition_when_translating_one_group() -> None:
    latest = fold_checkpoints(
        [
            _record(Checkpoint("g", "B.orders", 0, 100, 40)),
            _record(Checkpoint("g", "B.orders", 1, 7, 6)),
            _record(Checkpoint("g", "B.orders", 0, 130, 55)),
            _record(Checkpoint("h", "B.orders", 0, 1, 1)),
        ]
    ).in_key_order()
    assert offsets_of(latest, "g") == {("B.orders", 0): 55, ("B.orders", 1): 6}, (
        "g resumes at the downstream offset of its latest checkpoint per partition"
    )
    assert offsets_of(latest, "unknown") == {}, "no checkpoint: nothing to translate"


def test_client_refuses_a_config_without_bootstrap_when_built() -> None:
    with pytest.raises(ConfigError, match="bootstrap.servers"):
        MirrorClient({"client.id": "x"})
