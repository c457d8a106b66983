"""Topic configs of remote topics: what creation copies and what config sync changes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from srm_common.domain.filters import ConfigPropertyFilter
from srm_common.domain.topic_configs import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    STATIC_BROKER_CONFIG,
    ConfigChanges,
    TopicConfigEntry,
    is_copyable,
    plan_config_changes,
    select_configs_to_copy,
)

MM2_DEFAULT = ConfigPropertyFilter()


def topic(name: str, value: str) -> TopicConfigEntry:
    return TopicConfigEntry(name, value, DYNAMIC_TOPIC_CONFIG)


def default(name: str, value: str | None = "d") -> TopicConfigEntry:
    return TopicConfigEntry(name, value, DEFAULT_CONFIG, is_default=True)


# --- creation ------------------------------------------------------------------------------


def test_new_topic_gets_topic_level_configs_when_they_are_allowed() -> None:
    source = [
        topic("retention.ms", "1000"),
        topic("cleanup.policy", "compact"),
        topic("max.message.bytes", "2048"),
        default("segment.bytes", "1073741824"),
    ]
    assert select_configs_to_copy(source, MM2_DEFAULT) == {
        "retention.ms": "1000",
        "cleanup.policy": "compact",
        "max.message.bytes": "2048",
    }, "topic-level configs are copied; defaults are not"


def test_new_topic_skips_configs_when_excluded_by_mm2_defaults_or_the_user() -> None:
    source = [
        topic("min.insync.replicas", "2"),
        topic("unclean.leader.election.enable", "true"),
        topic("message.timestamp.type", "LogAppendTime"),
        topic("retention.ms", "1000"),
        topic("segment.ms", "60000"),
    ]
    assert select_configs_to_copy(source, MM2_DEFAULT) == {
        "retention.ms": "1000",
        "segment.ms": "60000",
    }, "MM2's config.properties.exclude defaults hold back the throttle/ISR/timestamp configs"
    user = ConfigPropertyFilter(exclude=[r"segment\..*"])
    assert select_configs_to_copy(source, user) == {
        "min.insync.replicas": "2",
        "unclean.leader.election.enable": "true",
        "message.timestamp.type": "LogAppendTime",
        "retention.ms": "1000",
    }, "a user list replaces MM2's defaults entirely"


def test_new_topic_skips_entries_when_read_only_sensitive_or_static() -> None:
    source = [
        TopicConfigEntry("a.read.only", "1", DYNAMIC_TOPIC_CONFIG, is_read_only=True),
        TopicConfigEntry("a.secret", None, DYNAMIC_TOPIC_CONFIG, is_sensitive=True),
        TopicConfigEntry("segment.bytes", "3000000", STATIC_BROKER_CONFIG),
        TopicConfigEntry("cleanup.policy", None, DYNAMIC_TOPIC_CONFIG),
    ]
    assert select_configs_to_copy(source, MM2_DEFAULT) == {}, (
        "read-only, sensitive, static-broker and valueless entries are never copied"
    )


def test_new_topic_gets_dynamic_broker_values_when_the_source_cluster_sets_them() -> None:
    # MM2 filters on isDefault (source != DEFAULT_CONFIG), so these are copied too.
    source = [
        TopicConfigEntry("retention.bytes", "5555", DYNAMIC_BROKER_CONFIG),
        TopicConfigEntry("segment.bytes", "2000000", DYNAMIC_DEFAULT_BROKER_CONFIG),
        TopicConfigEntry("min.insync.replicas", "1", DYNAMIC_DEFAULT_BROKER_CONFIG),
    ]
    assert select_configs_to_copy(source, MM2_DEFAULT) == {
        "retention.bytes": "5555",
        "segment.bytes": "2000000",
    }, "dynamic broker values are non-default and copied (min.insync.replicas is excluded)"


# --- config sync ---------------------------------------------------------------------------


def test_sync_sets_a_config_when_the_source_value_differs() -> None:
    changes = plan_config_changes(
        [topic("retention.ms", "2000"), topic("cleanup.policy", "compact")],
        [topic("retention.ms", "1000"), topic("cleanup.policy", "compact")],
        MM2_DEFAULT,
    )
    assert changes == ConfigChanges(to_set=(("retention.ms", "2000"),)), (
        "only the changed value is SET"
    )


def test_sync_sets_a_config_when_the_target_has_the_same_value_only_by_default() -> None:
    changes = plan_config_changes(
        [topic("retention.ms", "604800000")], [default("retention.ms", "604800000")], MM2_DEFAULT
    )
    assert changes.to_set == (("retention.ms", "604800000"),), (
        "an explicit source value is pinned on the remote topic, as MM2's SET does"
    )


def test_sync_deletes_a_config_when_default_on_source_but_set_on_target() -> None:
    changes = plan_config_changes(
        [default("retention.ms"), default("segment.ms")],
        [topic("retention.ms", "1000"), default("segment.ms")],
        MM2_DEFAULT,
    )
    assert changes == ConfigChanges(to_delete=("retention.ms",)), (
        "a source back at its default DELETEs the override; an unset target is left alone"
    )


def test_sync_leaves_configs_alone_when_excluded_or_untouchable() -> None:
    source = [
        default("min.insync.replicas"),
        topic("unclean.leader.election.enable", "true"),
        TopicConfigEntry("segment.bytes", "3000000", STATIC_BROKER_CONFIG),
        TopicConfigEntry("a.read.only", "1", DEFAULT_CONFIG, is_default=True, is_read_only=True),
    ]
    target = [
        topic("min.insync.replicas", "2"),
        default("unclean.leader.election.enable", "false"),
        topic("segment.bytes", "1000"),
        topic("a.read.only", "2"),
        topic("only.on.target", "x"),
    ]
    assert not plan_config_changes(source, target, MM2_DEFAULT), (
        "excluded, static, read-only and target-only configs are never touched"
    )


def test_sync_sets_a_config_when_the_target_does_not_describe_it() -> None:
    changes = plan_config_changes([topic("retention.ms", "1")], [], MM2_DEFAULT)
    assert changes.to_set == (("retention.ms", "1"),), "a missing target entry is SET"


# --- properties ----------------------------------------------------------------------------

NAMES = ["retention.ms", "cleanup.policy", "segment.ms", "min.insync.replicas", "x.secret"]
SOURCES = [
    DYNAMIC_TOPIC_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
    DEFAULT_CONFIG,
]
VALUES = st.sampled_from(["1", "2", "compact", "delete"])
FILTERS = st.sampled_from(
    [MM2_DEFAULT, ConfigPropertyFilter(exclude=[]), ConfigPropertyFilter(exclude=["seg.*"])]
)


@st.composite
def source_entries(draw: st.DrawFn) -> list[TopicConfigEntry]:
    """A described source topic: each name at most once, any source and flags."""
    entries = []
    for name in draw(st.lists(st.sampled_from(NAMES), unique=True)):
        source = draw(st.sampled_from(SOURCES))
        sensitive = draw(st.booleans())
        entries.append(
            TopicConfigEntry(
                name,
                None if sensitive else draw(VALUES),
                source,
                is_default=source == DEFAULT_CONFIG,
                is_read_only=draw(st.booleans()),
                is_sensitive=sensitive,
            )
        )
    return entries


TARGET_OVERRIDES = st.dictionaries(st.sampled_from(NAMES + ["only.on.target"]), VALUES)


def describe_target(overrides: dict[str, str]) -> list[TopicConfigEntry]:
    """The remote topic as its cluster would describe it: overrides, else defaults."""
    return [
        topic(name, overrides[name]) if name in overrides else default(name, "default")
        for name in NAMES + ["only.on.target"]
    ]


def apply(overrides: dict[str, str], changes: ConfigChanges) -> dict[str, str]:
    """What incrementalAlterConfigs does to the topic-level overrides."""
    result = {name: value for name, value in overrides.items() if name not in changes.to_delete}
    result.update(changes.to_set)
    return result


@given(source_entries(), TARGET_OVERRIDES, FILTERS)
def test_sync_converges_and_touches_only_allowed_names_when_applied(
    source: list[TopicConfigEntry],
    overrides: dict[str, str],
    config_filter: ConfigPropertyFilter,
) -> None:
    changes = plan_config_changes(source, describe_target(overrides), config_filter)
    touched = {name for name, _ in changes.to_set} | set(changes.to_delete)
    assert all(config_filter.should_replicate(name) for name in touched), "excluded touched"
    assert set(changes.to_delete) <= overrides.keys(), "DELETE only removes real overrides"
    assert not {name for name, _ in changes.to_set} & set(changes.to_delete), "SET and DELETE"
    synced = apply(overrides, changes)
    assert not plan_config_changes(source, describe_target(synced), config_filter), (
        "after applying the changes, a second sync has nothing to do"
    )
    for entry in source:
        if is_copyable(entry, config_filter):
            assert synced[entry.name] == entry.value, f"{entry.name} mirrors the source value"
        elif entry.name not in touched:
            assert synced.get(entry.name) == overrides.get(entry.name), f"{entry.name} kept"
    assert synced.get("only.on.target") == overrides.get("only.on.target"), "target-only kept"


@given(source_entries(), FILTERS)
def test_new_topic_configs_equal_what_sync_would_set_on_a_bare_topic(
    source: list[TopicConfigEntry], config_filter: ConfigPropertyFilter
) -> None:
    created = select_configs_to_copy(source, config_filter)
    changes = plan_config_changes(source, describe_target({}), config_filter)
    assert dict(changes.to_set) == created and not changes.to_delete, (
        "a topic created with the copied configs is already in sync"
    )
