"""Replication policies, cycle prevention, the origin header and policy loading."""

from __future__ import annotations

import pytest
from srm_common.domain.filters import TopicFilter
from srm_common.domain.policy import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    ReplicationPolicy,
    is_cycle,
    mm2_configs_topic,
    mm2_offsets_topic,
    mm2_status_topic,
    should_replicate_topic,
)
from srm_common.errors import ConfigError
from srm_common.policies import (
    is_known_policy_class,
    load_replication_policy,
    resolve_replication_policy_class,
)

DEFAULT = DefaultReplicationPolicy()
ALL_TOPICS = TopicFilter(include=[".*"], exclude=[])


# --- DefaultReplicationPolicy: the examples of the MM2 reference ---------------------------


def test_format_remote_topic_prefixes_alias_when_default_separator() -> None:
    assert DEFAULT.format_remote_topic("A", "orders") == "A.orders", "remote name is 'A.orders'"


@pytest.mark.parametrize(
    ("topic", "source"),
    [
        ("A.orders", "A"),
        ("B.A.orders", "B"),
        ("my.topic", "my"),
        ("orders", None),
        ("A.", None),
        (".x", ""),
        ("A..x", "A"),
        ("...", None),
        ("", None),
    ],
)
def test_topic_source_follows_java_split_when_topic_has_separators(
    topic: str, source: str | None
) -> None:
    assert DEFAULT.topic_source(topic) == source, f"topicSource({topic!r}) must be {source!r}"


@pytest.mark.parametrize(
    ("topic", "upstream"),
    [("A.orders", "orders"), ("B.A.orders", "A.orders"), (".x", "x"), ("A..x", ".x")],
)
def test_upstream_topic_strips_one_prefix_when_topic_is_remote(topic: str, upstream: str) -> None:
    assert DEFAULT.upstream_topic(topic) == upstream, f"upstream of {topic!r} is {upstream!r}"


def test_upstream_topic_is_none_when_topic_is_local() -> None:
    assert DEFAULT.upstream_topic("orders") is None, "a local topic has no upstream"
    assert DEFAULT.upstream_topic("A.") is None, "'A.' is local under Java split"


@pytest.mark.parametrize(
    ("topic", "original"),
    [("orders", "orders"), ("A.orders", "orders"), ("C.B.A.orders", "orders"), ("A.", "A.")],
)
def test_original_topic_strips_every_prefix_when_topic_crossed_hops(
    topic: str, original: str
) -> None:
    assert DEFAULT.original_topic(topic) == original, f"original of {topic!r} is {original!r}"


def test_internal_topic_names_follow_mm2_when_default_separator() -> None:
    assert DEFAULT.heartbeats_topic() == "heartbeats", "heartbeats topic is 'heartbeats'"
    assert DEFAULT.checkpoints_topic("A") == "A.checkpoints.internal", "checkpoints name"
    assert DEFAULT.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal", "offset syncs name"


def test_connect_topic_names_use_dot_when_any_separator() -> None:
    assert mm2_offsets_topic("A") == "mm2-offsets.A.internal", "Connect offsets topic name"
    assert mm2_configs_topic("A") == "mm2-configs.A.internal", "Connect configs topic name"
    assert mm2_status_topic("A") == "mm2-status.A.internal", "Connect status topic name"


@pytest.mark.parametrize("topic", ["heartbeats", "A.heartbeats", "B.A.heartbeats"])
def test_is_heartbeats_topic_when_original_is_heartbeats(topic: str) -> None:
    assert DEFAULT.is_heartbeats_topic(topic), f"{topic!r} is a heartbeats topic"


@pytest.mark.parametrize("topic", ["heartbeats.A", "myheartbeats", "A.heartbeats.x", "orders"])
def test_is_not_heartbeats_topic_when_original_differs(topic: str) -> None:
    assert not DEFAULT.is_heartbeats_topic(topic), f"{topic!r} is not a heartbeats topic"


def test_is_checkpoints_topic_when_suffix_matches() -> None:
    assert DEFAULT.is_checkpoints_topic("A.checkpoints.internal"), "checkpoints topic of A"
    assert not DEFAULT.is_checkpoints_topic("A.checkpoints"), "no '.internal' suffix"


@pytest.mark.parametrize(
    "topic",
    [
        "__consumer_offsets",
        "__transaction_state",
        ".hidden",
        "x-internal",
        "x.internal",
        "A.checkpoints.internal",
        "mm2-offset-syncs.B.internal",
        "mm2-offsets.A.internal",
        "mm2-configs.A.internal",
        "mm2-status.A.internal",
    ],
)
def test_is_internal_topic_when_kafka_connect_or_mm2_name(topic: str) -> None:
    assert DEFAULT.is_internal_topic(topic), f"{topic!r} must never be replicated"


@pytest.mark.parametrize("topic", ["orders", "A.orders", "internal", "x_internal", "heartbeats"])
def test_is_not_internal_topic_when_ordinary_name(topic: str) -> None:
    assert not DEFAULT.is_internal_topic(topic), f"{topic!r} is an ordinary topic"


@pytest.mark.parametrize(
    "topic",
    ["mm2-offsets.A.internal", "mm2-configs.A.internal", "x.internal", "x-internal"],
)
def test_is_internal_topic_when_custom_separator_and_dot_internal_kafka_13397(topic: str) -> None:
    policy = DefaultReplicationPolicy(separator="_")
    assert policy.is_internal_topic(topic), f"KAFKA-13397: {topic!r} is internal with sep '_'"


def test_is_mm2_internal_topic_when_mm2_names_only() -> None:
    for topic in ("A.checkpoints.internal", "mm2-offset-syncs.B.internal", "mm2-status.A.internal"):
        assert DEFAULT.is_mm2_internal_topic(topic), f"{topic!r} is an MM2 topic"
    for topic in ("__consumer_offsets", "x.internal", "orders"):
        assert not DEFAULT.is_mm2_internal_topic(topic), f"{topic!r} is not an MM2 topic"


def test_custom_separator_names_internal_topics_when_internal_separator_enabled_kip_949() -> None:
    policy = DefaultReplicationPolicy(separator="_", internal_topic_separator_enabled=True)
    assert policy.format_remote_topic("A", "orders") == "A_orders", "remote name uses '_'"
    assert policy.topic_source("A_orders") == "A", "source split on '_'"
    assert policy.checkpoints_topic("A") == "A_checkpoints_internal", "checkpoints use '_'"
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncs_B_internal", "syncs use '_'"
    assert policy.is_checkpoints_topic("A_checkpoints_internal"), "checkpoints with '_'"
    assert policy.is_internal_topic("mm2-offset-syncs_B_internal"), "syncs with '_' internal"
    assert policy.is_internal_topic("A_checkpoints_internal"), "checkpoints with '_' internal"


def test_custom_separator_keeps_dot_internal_names_when_internal_separator_disabled_kip_949() -> (
    None
):
    policy = DefaultReplicationPolicy(separator="_", internal_topic_separator_enabled=False)
    assert policy.format_remote_topic("A", "orders") == "A_orders", "remote name still uses '_'"
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal", "checkpoints keep '.'"
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal", "syncs keep '.'"
    assert policy.is_checkpoints_topic("A.checkpoints.internal"), "checkpoints with '.'"
    assert policy.is_mm2_internal_topic("mm2-offset-syncs.B.internal"), "syncs with '.'"
    assert policy.heartbeats_topic() == "heartbeats", "heartbeats never uses a separator"


def test_separator_is_refused_when_empty() -> None:
    with pytest.raises(ConfigError, match="separator") as caught:
        DefaultReplicationPolicy(separator="")
    assert caught.value.key == "replication.policy.separator", "error names the separator key"
    with pytest.raises(ConfigError):
        IdentityReplicationPolicy("A", separator="")


def test_multi_character_separator_splits_literally_when_separator_has_regex_chars() -> None:
    policy = DefaultReplicationPolicy(separator=".*")
    assert policy.topic_source("A.*orders") == "A", "separator is literal, not a regex"
    assert policy.topic_source("A.orders") is None, "'.' alone is not the separator '.*'"


def test_default_policy_satisfies_protocol_when_checked_at_runtime() -> None:
    assert isinstance(DEFAULT, ReplicationPolicy), "default policy implements the protocol"
    assert isinstance(IdentityReplicationPolicy("A"), ReplicationPolicy), "identity too"


# --- IdentityReplicationPolicy ---------------------------------------------------------------


def test_identity_keeps_names_when_not_heartbeats() -> None:
    policy = IdentityReplicationPolicy("A")
    assert policy.format_remote_topic("A", "orders") == "orders", "identity keeps the name"
    assert policy.format_remote_topic("A", "my.topic") == "my.topic", "dots are kept too"
    assert policy.topic_source("my.topic") == "A", "source is the configured alias"
    assert policy.upstream_topic("orders") == "orders", "upstream is the name itself"
    assert policy.original_topic("B.orders") == "B.orders", "original is the name itself"


def test_identity_topic_source_is_none_when_alias_unset() -> None:
    assert IdentityReplicationPolicy(None).topic_source("orders") is None, "no alias, no source"


def test_identity_follows_default_rules_when_heartbeats() -> None:
    policy = IdentityReplicationPolicy("A")
    assert policy.format_remote_topic("A", "heartbeats") == "A.heartbeats", "heartbeats prefixed"
    assert policy.topic_source("B.A.heartbeats") == "B", "heartbeats source by prefix"
    assert policy.upstream_topic("B.A.heartbeats") == "A.heartbeats", "heartbeats upstream"
    assert policy.original_topic("B.A.heartbeats") == "heartbeats", "heartbeats original"
    assert policy.is_heartbeats_topic("A.heartbeats"), "A.heartbeats is a heartbeats topic"


def test_identity_internal_topics_match_default_when_same_separator() -> None:
    policy = IdentityReplicationPolicy("A")
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal", "checkpoints name"
    assert policy.is_internal_topic("mm2-offset-syncs.B.internal"), "syncs are internal"


# --- cycles and the replication rule ---------------------------------------------------------


def test_chain_gives_two_prefixes_when_primary_to_backup_to_dr() -> None:
    on_backup = DEFAULT.format_remote_topic("primary", "orders")
    assert should_replicate_topic(DEFAULT, ALL_TOPICS, "orders", "primary", "backup"), (
        "primary's orders must go to backup"
    )
    assert should_replicate_topic(DEFAULT, ALL_TOPICS, on_backup, "backup", "dr"), (
        "backup's primary.orders must go to dr"
    )
    on_dr = DEFAULT.format_remote_topic("backup", on_backup)
    assert on_dr == "backup.primary.orders", "dr holds backup.primary.orders"
    assert not should_replicate_topic(DEFAULT, ALL_TOPICS, on_dr, "dr", "primary"), (
        "dr's copy of primary data must never reach primary again"
    )


def test_remote_topic_is_not_copied_back_when_active_active() -> None:
    assert is_cycle(DEFAULT, "primary.orders", "primary"), "primary.orders would loop to primary"
    assert not should_replicate_topic(DEFAULT, ALL_TOPICS, "primary.orders", "backup", "primary"), (
        "backup's primary.orders is never copied back to primary"
    )
    assert should_replicate_topic(DEFAULT, ALL_TOPICS, "orders", "backup", "primary"), (
        "backup's own orders still go to primary"
    )


def test_is_cycle_is_false_when_identity_policy() -> None:
    policy = IdentityReplicationPolicy("backup")
    assert not is_cycle(policy, "orders", "primary"), "identity cannot see loops"


def test_should_replicate_heartbeats_when_filter_excludes_them_and_enabled() -> None:
    nothing = TopicFilter(include=[], exclude=[])
    assert should_replicate_topic(DEFAULT, nothing, "A.heartbeats", "B", "C"), (
        "heartbeats are replicated whatever the filter when heartbeats replication is on"
    )
    assert not should_replicate_topic(
        DEFAULT, nothing, "A.heartbeats", "B", "C", heartbeats_replication_enabled=False
    ), "heartbeats follow the filter when heartbeats replication is off (KIP-1089)"


def test_should_not_replicate_when_internal_even_if_filter_matches() -> None:
    for topic in ("__consumer_offsets", "A.checkpoints.internal", "x.internal"):
        assert not should_replicate_topic(DEFAULT, ALL_TOPICS, topic, "A", "B"), (
            f"internal topic {topic!r} must never be replicated"
        )


def test_should_not_replicate_when_filter_rejects() -> None:
    only_orders = TopicFilter(include=["orders"], exclude=[])
    assert not should_replicate_topic(DEFAULT, only_orders, "payments", "A", "B"), "not selected"


def test_should_replicate_refuses_flow_when_source_equals_target() -> None:
    with pytest.raises(ConfigError, match="two different clusters"):
        should_replicate_topic(DEFAULT, ALL_TOPICS, "orders", "A", "A")


class _LoopingPolicy(DefaultReplicationPolicy):
    """A broken policy whose upstream of 'x.a' is 'x.b' and back again."""

    def upstream_topic(self, topic: str) -> str | None:
        return "x.b" if topic == "x.a" else "x.a"


class _GrowingPolicy(DefaultReplicationPolicy):
    """A broken policy whose upstream always grows."""

    def upstream_topic(self, topic: str) -> str | None:
        return topic + "z"


@pytest.mark.parametrize("policy", [_LoopingPolicy(), _GrowingPolicy()])
def test_is_cycle_raises_when_policy_never_stops(policy: ReplicationPolicy) -> None:
    with pytest.raises(ConfigError, match="never reaches the original name"):
        is_cycle(policy, "x.a", "target")


# --- loading a policy by name ----------------------------------------------------------------


class PrefixPolicy(DefaultReplicationPolicy):
    """A user policy taking only some of the offered keyword arguments."""

    def __init__(self, separator: str = ".", source_alias: str | None = None) -> None:
        super().__init__(separator)
        self.source_alias = source_alias


class NotAPolicy:
    """Has none of the policy methods."""


def _load(name: str) -> ReplicationPolicy:
    return load_replication_policy(
        name, separator="_", internal_topic_separator_enabled=False, source_alias="A"
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("org.apache.kafka.connect.mirror.DefaultReplicationPolicy", DefaultReplicationPolicy),
        ("org.apache.kafka.connect.mirror.IdentityReplicationPolicy", IdentityReplicationPolicy),
        ("DefaultReplicationPolicy", DefaultReplicationPolicy),
        ("IdentityReplicationPolicy", IdentityReplicationPolicy),
        ("default", DefaultReplicationPolicy),
        (" Identity ", IdentityReplicationPolicy),
        ("srm_common.domain.policy.DefaultReplicationPolicy", DefaultReplicationPolicy),
        ("srm_common.domain.policy:IdentityReplicationPolicy", IdentityReplicationPolicy),
    ],
)
def test_load_policy_returns_configured_class_when_name_known(
    name: str, expected: type[DefaultReplicationPolicy]
) -> None:
    policy = _load(name)
    assert type(policy) is expected, f"{name!r} must load {expected.__name__}"
    assert policy.format_remote_topic("A", "heartbeats") == "A_heartbeats", "separator passed"
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal", "internal flag passed"


def test_load_policy_passes_source_alias_when_identity() -> None:
    assert _load("identity").topic_source("orders") == "A", "identity gets source_alias"


def test_load_policy_passes_only_accepted_kwargs_when_user_class() -> None:
    policy = _load(f"{__name__}:PrefixPolicy")
    assert isinstance(policy, PrefixPolicy), "the user class is instantiated"
    assert policy.separator == "_", "separator passed to the user class"
    assert policy.source_alias == "A", "source_alias passed to the user class"
    assert policy.internal_topic_separator_enabled, "a flag it does not accept keeps its default"


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("org.apache.kafka.connect.mirror.FancyReplicationPolicy", "unknown replication policy"),
        ("FancyReplicationPolicy", "unknown replication policy"),
        ("no_such_package.policies:Policy", "cannot import module 'no_such_package.policies'"),
        ("srm_common.domain.policy:NoSuchPolicy", "has no class 'NoSuchPolicy'"),
        (f"{__name__}:NotAPolicy", "is not a replication policy"),
        ("srm_common.domain.policy:is_cycle", "is not a replication policy"),
    ],
)
def test_load_policy_raises_config_error_when_name_unusable(name: str, hint: str) -> None:
    with pytest.raises(ConfigError, match=hint) as caught:
        _load(name)
    assert caught.value.key == "replication.policy.class", "error names the config key"
    assert "IdentityReplicationPolicy" in str(caught.value), "error lists what would be valid"
    assert not is_known_policy_class(name), f"{name!r} must not validate"


class BrokenInitPolicy(DefaultReplicationPolicy):
    def __init__(self, separator: str) -> None:
        raise ValueError(f"refusing separator {separator!r}")


def test_load_policy_raises_config_error_when_user_init_fails() -> None:
    with pytest.raises(ConfigError, match="cannot create replication policy"):
        _load(f"{__name__}:BrokenInitPolicy")


def test_is_known_policy_class_when_valid_names_without_instantiating() -> None:
    assert is_known_policy_class("org.apache.kafka.connect.mirror.DefaultReplicationPolicy"), (
        "MM2's Java name is known"
    )
    assert resolve_replication_policy_class(f"{__name__}.PrefixPolicy") is PrefixPolicy, (
        "a dotted user path resolves to the class"
    )
