"""The validated configuration model: clusters, every ordered flow, resolved client configs.

Pure data (frozen dataclasses, read-only mappings); built by
:func:`srm_common.config.load_config` and never by hand in production code. Values are
MM2's after defaults and precedence (``mm2-semantics.md`` §1.2, §1.3), so nothing
downstream looks a key up or applies a default again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from srm_common.domain.filters import ConfigPropertyFilter, GroupFilter, TopicFilter
from srm_common.domain.policy import IdentityReplicationPolicy, ReplicationPolicy
from srm_common.errors import ConfigError
from srm_common.policies import load_replication_policy

ClientRole = Literal["consumer", "producer", "admin"]


def _empty() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True)
class ClusterConfig:
    """One Kafka cluster, called by its alias.

    ``client`` holds the connection keys every client of this cluster needs
    (``bootstrap.servers``, ``security.protocol``, ``ssl.*``, ``sasl.*``): the cluster's
    own, else the top-level ones. ``consumer``/``producer``/``admin`` are the
    ``<alias>.consumer.*`` etc. overrides as written (prefix stripped). ``extra`` holds the
    other ``<alias>.*`` keys (Connect worker keys such as ``offset.flush.timeout.ms``);
    MM2 gives them to the workers of herders targeting this cluster, never to
    replication clients.
    """

    alias: str
    bootstrap_servers: tuple[str, ...]
    client: Mapping[str, str] = field(default_factory=_empty)
    consumer: Mapping[str, str] = field(default_factory=_empty)
    producer: Mapping[str, str] = field(default_factory=_empty)
    admin: Mapping[str, str] = field(default_factory=_empty)
    extra: Mapping[str, str] = field(default_factory=_empty)

    def client_config(self, role: ClientRole) -> dict[str, str]:
        """Config for a plain client of this cluster (tools, monitoring): connection keys,
        then the role's overrides. Flows use their own resolved configs instead."""
        overrides = {"consumer": self.consumer, "producer": self.producer, "admin": self.admin}
        return {**self.client, **overrides[role]}


@dataclass(frozen=True)
class FlowConfig:
    """Flow ``source->target`` fully resolved: MM2 keys, defaults, and client configs.

    Every ordered pair of distinct aliases has one; ``enabled`` False means the pair only
    emits heartbeats (when ``emit_heartbeats_enabled``). Lists keep the patterns as
    written (matched against whole names; an empty list matches nothing). Intervals are
    seconds; ``*_enabled`` False means the job is not scheduled at all. Replication
    factors may be -1 (the broker's default).

    Client configs (each a complete config for one Kafka client):

    * ``source_consumer`` reads records and offset syncs from the source;
    * ``source_producer`` writes offset syncs to the source (location ``source``);
    * ``source_admin`` / ``target_admin`` list and create topics, read group offsets;
    * ``target_consumer`` reads the target (offset syncs at location ``target``);
    * ``target_producer`` writes replicated records (MM2's worker producer);
    * ``target_internal_producer`` writes heartbeats, checkpoints and target offset syncs.

    ``extra`` holds the other top-level and flow-level keys (flow wins): known MM2 keys
    without a field here (``emit.offset-syncs.enabled``, ``use.defaults.from``...)
    and Connect keys passed through unchecked. ``written`` names the MM2 keys the file
    sets for this flow (top or flow level, legacy names as written), so that a value
    the user chose can be told from MM2's default (:mod:`srm_common.config.unsupported`).
    """

    source: str
    target: str
    enabled: bool
    topics: tuple[str, ...]
    topics_exclude: tuple[str, ...]
    groups: tuple[str, ...]
    groups_exclude: tuple[str, ...]
    config_properties_exclude: tuple[str, ...]
    tasks_max: int
    replication_factor: int
    replication_policy_class: str
    replication_policy_separator: str
    internal_topic_separator_enabled: bool
    heartbeats_replication_enabled: bool
    emit_heartbeats_enabled: bool
    emit_heartbeats_interval_seconds: int
    emit_checkpoints_enabled: bool
    emit_checkpoints_interval_seconds: int
    sync_group_offsets_enabled: bool
    sync_group_offsets_interval_seconds: int
    refresh_topics_enabled: bool
    refresh_topics_interval_seconds: int
    refresh_groups_enabled: bool
    refresh_groups_interval_seconds: int
    sync_topic_configs_enabled: bool
    sync_topic_configs_interval_seconds: int
    sync_topic_acls_enabled: bool
    sync_topic_acls_interval_seconds: int
    offset_lag_max: int
    batch_max_records: int
    admin_max_records: int
    idle_wait_ms: int
    commit_interval_ms: int
    poison_max_tries: int
    copy_batches: bool
    metrics_enabled: bool
    metrics_interval_ms: int
    metrics_topic_replication_factor: int
    offset_syncs_topic_location: str
    heartbeats_topic_replication_factor: int
    checkpoints_topic_replication_factor: int
    offset_syncs_topic_replication_factor: int
    source_consumer: Mapping[str, str] = field(default_factory=_empty)
    source_producer: Mapping[str, str] = field(default_factory=_empty)
    source_admin: Mapping[str, str] = field(default_factory=_empty)
    target_consumer: Mapping[str, str] = field(default_factory=_empty)
    target_producer: Mapping[str, str] = field(default_factory=_empty)
    target_internal_producer: Mapping[str, str] = field(default_factory=_empty)
    target_admin: Mapping[str, str] = field(default_factory=_empty)
    extra: Mapping[str, str] = field(default_factory=_empty)
    written: frozenset[str] = field(default=frozenset(), compare=False)

    @property
    def name(self) -> str:
        """MM2's name of the flow: ``primary->backup``."""
        return f"{self.source}->{self.target}"

    def topic_filter(self) -> TopicFilter:
        """The ``topics`` / ``topics.exclude`` filter of this flow."""
        return TopicFilter(include=self.topics, exclude=self.topics_exclude)

    def group_filter(self) -> GroupFilter:
        """The ``groups`` / ``groups.exclude`` filter of this flow."""
        return GroupFilter(include=self.groups, exclude=self.groups_exclude)

    def config_property_filter(self) -> ConfigPropertyFilter:
        """The ``config.properties.exclude`` filter of this flow."""
        return ConfigPropertyFilter(exclude=self.config_properties_exclude)

    def replication_policy(self) -> ReplicationPolicy:
        """The configured policy, built for this flow (validated at load time)."""
        return load_replication_policy(
            self.replication_policy_class,
            separator=self.replication_policy_separator,
            internal_topic_separator_enabled=self.internal_topic_separator_enabled,
            source_alias=self.source,
        )

    @property
    def keeps_topic_names(self) -> bool:
        """Under the identity policy (or one built on it) a remote topic has the source
        topic's own name, so the target partition may also hold the target's own records
        or another flow's copies: copies carry origin and copy headers, and offsets are
        read from them rather than assumed. Decided here once for every user."""
        return isinstance(self.replication_policy(), IdentityReplicationPolicy)


@dataclass(frozen=True)
class SrmConfig:
    """A whole configuration: clusters by alias and a flow for every ordered pair.

    ``clusters`` and ``flows`` keep declaration order (flows: by source, then target).
    ``extra`` holds top-level keys that are neither connection keys nor flow fields
    (Connect worker keys, ``config.providers``...). ``warnings`` lists harmless
    surprises (a key set twice, a legacy alias) and is not part of equality.
    """

    source: str
    clusters: Mapping[str, ClusterConfig]
    flows: Mapping[tuple[str, str], FlowConfig]
    extra: Mapping[str, str] = field(default_factory=_empty)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def aliases(self) -> tuple[str, ...]:
        """Cluster aliases in declaration order."""
        return tuple(self.clusters)

    def enabled_flows(self) -> tuple[FlowConfig, ...]:
        """Flows with ``enabled`` true, in declaration order."""
        return tuple(flow for flow in self.flows.values() if flow.enabled)

    def cluster(self, alias: str) -> ClusterConfig:
        """The cluster called ``alias``; :class:`ConfigError` naming the known ones if none."""
        try:
            return self.clusters[alias]
        except KeyError:
            raise self._unknown(alias, key=alias) from None

    def flow(self, source: str, target: str) -> FlowConfig:
        """Flow ``source->target``; :class:`ConfigError` for an unknown alias or a self-flow."""
        for alias in (source, target):
            if alias not in self.clusters:
                raise self._unknown(alias, key=f"{source}->{target}")
        if source == target:
            raise ConfigError(
                f"no flow from cluster {source!r} to itself; source and target must differ",
                source=self.source,
                key=f"{source}->{target}",
            )
        return self.flows[(source, target)]

    def _unknown(self, alias: str, *, key: str) -> ConfigError:
        known = ", ".join(self.clusters) or "none"
        return ConfigError(
            f"unknown cluster alias {alias!r}; known aliases: {known}", source=self.source, key=key
        )
