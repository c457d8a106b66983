"""The catalogue of configuration keys SRM knows: type, MM2 default, doc, and key families.

Defaults are written as MM2 writes them (strings) and parsed by the same code as user
values, so a default can never be something a user could not write. The table follows
``mm2-semantics.md`` §1.2.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from srm_common.domain.filters import (
    DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
    DEFAULT_GROUPS_EXCLUDE,
    DEFAULT_TOPICS_EXCLUDE,
)


class Kind(enum.Enum):
    """How a value is parsed; see :mod:`srm_common.config.validate`."""

    BOOLEAN = "boolean"  # true/false, case-insensitive (Java's ConfigDef)
    INT = "int"  # 32-bit
    LONG = "long"  # 64-bit
    PATTERNS = "patterns"  # comma list of regexes matched against whole names
    STRING = "string"
    CLASS = "class"
    CHOICE = "choice"  # one of ``choices``, case-insensitive


@dataclass(frozen=True)
class KeySpec:
    """One known MM2/Connect connector key.

    ``field`` names the :class:`~srm_common.config.model.FlowConfig` attribute it fills;
    ``None`` means the key is known and validated but passed through in ``extra``.
    ``minimum`` bounds numbers; ``minus_one`` also allows -1 ("broker default", as in
    Kafka's CreateTopics). ``enabled_key`` names the switch of an interval key.
    """

    name: str
    kind: Kind
    default: str
    doc: str
    field: str | None = None
    minimum: int | None = None
    minus_one: bool = False
    choices: tuple[str, ...] = ()
    enabled_key: str | None = None
    flow_only: bool = False


def _interval(job: str, default: str, field: str | None, doc: str) -> list[KeySpec]:
    enabled_field = f"{field}_enabled" if field else None
    interval_field = f"{field}_interval_seconds" if field else None
    return [
        KeySpec(f"{job}.enabled", Kind.BOOLEAN, "true", f"Whether to {doc}.", enabled_field),
        KeySpec(
            f"{job}.interval.seconds",
            Kind.LONG,
            default,
            f"Seconds between runs of the job switched by '{job}.enabled'.",
            interval_field,
            minimum=1,
            enabled_key=f"{job}.enabled",
        ),
    ]


def _rf(name: str, default: str, doc: str, field: str) -> KeySpec:
    return KeySpec(name, Kind.INT, default, doc, field, minimum=1, minus_one=True)


def _patterns(name: str, default: tuple[str, ...], doc: str, field: str) -> KeySpec:
    return KeySpec(name, Kind.PATTERNS, ", ".join(default), doc, field)


_SPECS: list[KeySpec] = [
    KeySpec("enabled", Kind.BOOLEAN, "false", "Whether flow source->target replicates.", "enabled"),
    _patterns("topics", (".*",), "Topics to replicate (regex list).", "topics"),
    _patterns(
        "topics.exclude", DEFAULT_TOPICS_EXCLUDE, "Topics never replicated.", "topics_exclude"
    ),
    _patterns("groups", (".*",), "Consumer groups to checkpoint (regex list).", "groups"),
    _patterns(
        "groups.exclude", DEFAULT_GROUPS_EXCLUDE, "Groups never checkpointed.", "groups_exclude"
    ),
    _patterns(
        "config.properties.exclude",
        DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
        "Topic configs never copied to remote topics.",
        "config_properties_exclude",
    ),
    KeySpec("tasks.max", Kind.INT, "1", "Most tasks per connector.", "tasks_max", minimum=1),
    _rf(
        "replication.factor", "2", "Replication factor of new remote topics.", "replication_factor"
    ),
    KeySpec(
        "replication.policy.class",
        Kind.CLASS,
        "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
        "How remote topics are named.",
        "replication_policy_class",
    ),
    KeySpec(
        "replication.policy.separator",
        Kind.STRING,
        ".",
        "Separator between source alias and topic in remote topic names.",
        "replication_policy_separator",
    ),
    KeySpec(
        "replication.policy.internal.topic.separator.enabled",
        Kind.BOOLEAN,
        "true",
        "Use the separator in internal topic names too (KIP-949).",
        "internal_topic_separator_enabled",
    ),
    KeySpec(
        "heartbeats.replication.enabled",
        Kind.BOOLEAN,
        "true",
        "Replicate heartbeats topics even when 'topics' does not select them (KIP-1089).",
        "heartbeats_replication_enabled",
    ),
    *_interval("emit.heartbeats", "1", "emit_heartbeats", "emit heartbeats to the target"),
    *_interval("emit.checkpoints", "60", "emit_checkpoints", "emit consumer group checkpoints"),
    *_interval("refresh.topics", "600", "refresh_topics", "look for new topics periodically"),
    *_interval("refresh.groups", "600", "refresh_groups", "look for new groups periodically"),
    *_interval(
        "sync.topic.configs", "600", "sync_topic_configs", "copy topic configs periodically"
    ),
    *_interval("sync.topic.acls", "600", "sync_topic_acls", "copy topic ACLs periodically"),
    KeySpec(
        "sync.group.offsets.enabled",
        Kind.BOOLEAN,
        "false",
        "Write translated offsets of idle groups to the target (KIP-545).",
        "sync_group_offsets_enabled",
    ),
    KeySpec(
        "sync.group.offsets.interval.seconds",
        Kind.LONG,
        "60",
        "Seconds between group offset syncs.",
        "sync_group_offsets_interval_seconds",
        minimum=1,
        enabled_key="sync.group.offsets.enabled",
    ),
    KeySpec(
        "offset.lag.max",
        Kind.LONG,
        "100",
        "Records a partition may advance before a new offset sync is emitted.",
        "offset_lag_max",
        minimum=0,
    ),
    KeySpec(
        "offset-syncs.topic.location",
        Kind.CHOICE,
        "source",
        "Cluster holding the offset-syncs topic (KIP-716).",
        "offset_syncs_topic_location",
        choices=("source", "target"),
    ),
    _rf(
        "heartbeats.topic.replication.factor",
        "3",
        "Replication factor of the heartbeats topic.",
        "heartbeats_topic_replication_factor",
    ),
    _rf(
        "checkpoints.topic.replication.factor",
        "3",
        "Replication factor of the checkpoints topic.",
        "checkpoints_topic_replication_factor",
    ),
    _rf(
        "offset-syncs.topic.replication.factor",
        "3",
        "Replication factor of the offset-syncs topic.",
        "offset_syncs_topic_replication_factor",
    ),
    KeySpec("emit.offset-syncs.enabled", Kind.BOOLEAN, "true", "Emit offset syncs (KIP-1031)."),
    KeySpec(
        "use.defaults.from",
        Kind.CHOICE,
        "target",
        "Cluster whose defaults fill topic configs (KIP-894).",
        choices=("source", "target"),
    ),
    KeySpec("consumer.poll.timeout.ms", Kind.LONG, "1000", "Source poll timeout.", minimum=0),
    # SRM's own keys (not MM2's): how the copy loops of source tasks run.
    KeySpec(
        "srm.batch.max.records",
        Kind.INT,
        "50000",
        "Most upstream offsets a partition is copied past its recorded progress (its"
        " reservation); also bounds what a restart compares.",
        "batch_max_records",
        minimum=1,
    ),
    KeySpec(
        "srm.admin.max.records",
        Kind.INT,
        "10000",
        "Most metadata records one request creating, growing or reconfiguring remote topics"
        " (or creating ACLs) may generate on the target; larger changes are sent in chunks"
        " (KRaft refuses more than 10,000 per operation).",
        "admin_max_records",
        minimum=1,
    ),
    KeySpec(
        "srm.idle.wait.ms",
        Kind.LONG,
        "100",
        "How long a copy loop waits for new source records before it looks at its plan again.",
        "idle_wait_ms",
        minimum=1,
    ),
    KeySpec(
        "srm.commit.interval.ms",
        Kind.LONG,
        "1000",
        "How often the progress of a partition that is copying is recorded.",
        "commit_interval_ms",
        minimum=10,
    ),
    KeySpec(
        "srm.poison.max.tries",
        Kind.INT,
        "3",
        "Times a record the target refuses is tried before its partition halts.",
        "poison_max_tries",
        minimum=1,
    ),
    KeySpec(
        "srm.copy.batches",
        Kind.BOOLEAN,
        "true",
        "Whether the copy slots pass the source's record batches through whole (re-stamped,"
        " not decoded; a batch a copy stands inside, with offset gaps or with LogAppendTime"
        " is rebuilt with its codec) instead of copying record by record.",
        "copy_batches",
    ),
    KeySpec(
        "srm.metrics.enabled",
        Kind.BOOLEAN,
        "true",
        "Whether drivers write raw replication metrics to srm-metrics-raw.internal on the target.",
        "metrics_enabled",
    ),
    KeySpec(
        "srm.metrics.interval.ms",
        Kind.LONG,
        "10000",
        "Milliseconds each raw metrics sample covers (how often drivers write them).",
        "metrics_interval_ms",
        minimum=1000,
        enabled_key="srm.metrics.enabled",
    ),
    _rf(
        "srm.metrics.topic.replication.factor",
        "-1",
        "Replication factor of srm-metrics-raw.internal when a driver creates it.",
        "metrics_topic_replication_factor",
    ),
    KeySpec("admin.timeout.ms", Kind.LONG, "60000", "Admin request timeout.", minimum=0),
    KeySpec(
        "topic.filter.class",
        Kind.CLASS,
        "org.apache.kafka.connect.mirror.DefaultTopicFilter",
        "Pluggable topic filter.",
    ),
    KeySpec(
        "group.filter.class",
        Kind.CLASS,
        "org.apache.kafka.connect.mirror.DefaultGroupFilter",
        "Pluggable group filter.",
    ),
    KeySpec(
        "config.property.filter.class",
        Kind.CLASS,
        "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
        "Pluggable topic config filter.",
    ),
    KeySpec(
        "forwarding.admin.class",
        Kind.CLASS,
        "org.apache.kafka.clients.admin.ForwardingAdmin",
        "Admin wrapper (KIP-787).",
    ),
    KeySpec(
        "exactly.once.support",
        Kind.CHOICE,
        "requested",
        "Connect exactly-once for source connectors (KIP-618).",
        choices=("requested", "required"),
        flow_only=True,
    ),
    KeySpec(
        "add.source.alias.to.metrics",
        Kind.BOOLEAN,
        "false",
        "Tag metrics with the source (KIP-911).",
    ),
]

CONNECTOR_KEYS: Mapping[str, KeySpec] = {spec.name: spec for spec in _SPECS}
"""Every connector-level key SRM validates, by name."""

LEGACY_KEYS: Mapping[str, str] = {
    "topics.blacklist": "topics.exclude",
    "groups.blacklist": "groups.exclude",
    "config.properties.blacklist": "config.properties.exclude",
}
"""MM2 2.x/3.x names still accepted (removed in Kafka 4.0); the new key wins when both are set."""

CLUSTERS_KEY = "clusters"


def connector_key_names() -> tuple[str, ...]:
    """Every connector key and legacy alias, for suggestions."""
    return (*CONNECTOR_KEYS, *LEGACY_KEYS)
