"""Building one FlowConfig: MM2 defaults, then top-level keys, then ``S->T.x`` keys."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from srm_common.config.classify import Level, Levels
from srm_common.config.clients import flow_client_configs
from srm_common.config.keys import CONNECTOR_KEYS, LEGACY_KEYS, KeySpec
from srm_common.config.model import ClusterConfig, FlowConfig
from srm_common.config.problems import Problems
from srm_common.config.raw import Entry
from srm_common.config.validate import Value, client_value, parse_value

Parsed = dict[str, tuple[Value, Entry | None]]
"""Parsed connector values of one level (or merged levels) with the entry that set them."""


def _default(spec: KeySpec) -> Value:
    value = parse_value(spec, Entry(spec.name, spec.default, None, spec.name), Problems(""))
    assert value is not None, f"catalogue default of {spec.name} does not parse"
    return value


_DEFAULTS: Mapping[str, Value] = {name: _default(spec) for name, spec in CONNECTOR_KEYS.items()}
_LEGACY_OF: Mapping[str, str] = {new: old for old, new in LEGACY_KEYS.items()}

YAML_DEFAULT_TOPICS: tuple[str, ...] = ()
"""``topics`` of a flow that ``srm.yaml`` does not give one: none, as in Cloudera SRM,
where an enabled flow replicates nothing until ``srm-control topics --add`` allows
topics. An MM2 properties file keeps MM2's ``.*``, so that it means what it meant
to MirrorMaker 2."""


class _Values:
    """Typed lookups of one flow's merged values: flow level, else top level, else default."""

    def __init__(self, values: Parsed) -> None:
        self.values = values

    def get(self, name: str) -> Value:
        for key in (name, _LEGACY_OF.get(name)):
            if key is not None and key in self.values:
                return self.values[key][0]
        return _DEFAULTS[name]

    def flag(self, name: str) -> bool:
        value = self.get(name)
        assert isinstance(value, bool), name
        return value

    def number(self, name: str) -> int:
        value = self.get(name)
        assert isinstance(value, int) and not isinstance(value, bool), name
        return value

    def text(self, name: str) -> str:
        value = self.get(name)
        assert isinstance(value, str), name
        return value

    def patterns(self, name: str) -> tuple[str, ...]:
        value = self.get(name)
        assert isinstance(value, tuple), name
        return value

    def written(self, name: str) -> bool:
        return name in self.values or _LEGACY_OF.get(name) in self.values


def build_flow(
    source: str,
    target: str,
    values: Parsed,
    levels: Levels,
    clusters: Mapping[str, ClusterConfig],
    warnings: list[str],
    *,
    default_topics: tuple[str, ...] | None = None,
) -> FlowConfig:
    """One flow from its merged ``values``. ``default_topics`` replaces MM2's ``.*`` when
    no level writes ``topics`` (``srm.yaml`` passes ``()``: SRM's "nothing until
    allowed", see :data:`YAML_DEFAULT_TOPICS`)."""
    for old, new in LEGACY_KEYS.items():
        if old in values and new in values:
            entry = values[old][1]
            shown = entry.display if entry else old
            warnings.append(
                f"key '{shown}' is ignored for {source}->{target} because"
                f" '{new}' is set (the new key wins, as in MM2)"
            )
    flow_level = levels.flows.get((source, target), Level())
    prefixes = {
        prefix: {
            **client_strings(levels.top.clients.get(prefix, {})),
            **client_strings(flow_level.clients.get(prefix, {})),
        }
        for prefix in {*levels.top.clients, *flow_level.clients}
    }
    clients = flow_client_configs(
        source,
        target,
        {alias: cluster.client for alias, cluster in clusters.items()},
        {
            alias: {"consumer": c.consumer, "producer": c.producer, "admin": c.admin}
            for alias, c in clusters.items()
        },
        prefixes,
    )
    extra = {**strings(levels.top.extra), **strings(flow_level.extra), **known_extra(values)}
    v = _Values(values)
    return FlowConfig(
        source=source,
        target=target,
        enabled=v.flag("enabled"),
        topics=(
            default_topics
            if default_topics is not None and not v.written("topics")
            else v.patterns("topics")
        ),
        topics_exclude=v.patterns("topics.exclude"),
        groups=v.patterns("groups"),
        groups_exclude=v.patterns("groups.exclude"),
        config_properties_exclude=v.patterns("config.properties.exclude"),
        tasks_max=v.number("tasks.max"),
        replication_factor=v.number("replication.factor"),
        replication_policy_class=v.text("replication.policy.class"),
        replication_policy_separator=v.text("replication.policy.separator"),
        internal_topic_separator_enabled=v.flag(
            "replication.policy.internal.topic.separator.enabled"
        ),
        heartbeats_replication_enabled=v.flag("heartbeats.replication.enabled"),
        emit_heartbeats_enabled=v.flag("emit.heartbeats.enabled"),
        emit_heartbeats_interval_seconds=v.number("emit.heartbeats.interval.seconds"),
        emit_checkpoints_enabled=v.flag("emit.checkpoints.enabled"),
        emit_checkpoints_interval_seconds=v.number("emit.checkpoints.interval.seconds"),
        sync_group_offsets_enabled=v.flag("sync.group.offsets.enabled"),
        sync_group_offsets_interval_seconds=v.number("sync.group.offsets.interval.seconds"),
        refresh_topics_enabled=v.flag("refresh.topics.enabled"),
        refresh_topics_interval_seconds=v.number("refresh.topics.interval.seconds"),
        refresh_groups_enabled=v.flag("refresh.groups.enabled"),
        refresh_groups_interval_seconds=v.number("refresh.groups.interval.seconds"),
        sync_topic_configs_enabled=v.flag("sync.topic.configs.enabled"),
        sync_topic_configs_interval_seconds=v.number("sync.topic.configs.interval.seconds"),
        sync_topic_acls_enabled=v.flag("sync.topic.acls.enabled"),
        sync_topic_acls_interval_seconds=v.number("sync.topic.acls.interval.seconds"),
        offset_lag_max=v.number("offset.lag.max"),
        batch_max_records=v.number("srm.batch.max.records"),
        admin_max_records=v.number("srm.admin.max.records"),
        idle_wait_ms=v.number("srm.idle.wait.ms"),
        commit_interval_ms=v.number("srm.commit.interval.ms"),
        poison_max_tries=v.number("srm.poison.max.tries"),
        copy_batches=v.flag("srm.copy.batches"),
        metrics_enabled=v.flag("srm.metrics.enabled"),
        metrics_interval_ms=v.number("srm.metrics.interval.ms"),
        metrics_topic_replication_factor=v.number("srm.metrics.topic.replication.factor"),
        offset_syncs_topic_location=v.text("offset-syncs.topic.location"),
        heartbeats_topic_replication_factor=v.number("heartbeats.topic.replication.factor"),
        checkpoints_topic_replication_factor=v.number("checkpoints.topic.replication.factor"),
        offset_syncs_topic_replication_factor=v.number("offset-syncs.topic.replication.factor"),
        source_consumer=clients["source_consumer"],
        source_producer=clients["source_producer"],
        source_admin=clients["source_admin"],
        target_consumer=clients["target_consumer"],
        target_producer=clients["target_producer"],
        target_internal_producer=clients["target_internal_producer"],
        target_admin=clients["target_admin"],
        extra=MappingProxyType(extra),
        written=frozenset(values),
    )


def known_extra(values: Parsed) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, (value, _) in values.items():
        spec = CONNECTOR_KEYS.get(key)
        if spec is not None and spec.field is None:
            out[key] = _render(value)
    return out


def _render(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ", ".join(value)
    return str(value)


def strings(entries: Mapping[str, Entry]) -> dict[str, str]:
    return {
        key: _render(e.value) if isinstance(e.value, tuple) else e.value.strip()
        for key, e in entries.items()
    }


def client_strings(entries: Mapping[str, Entry]) -> dict[str, str]:
    return {key: client_value(key, entry.value) for key, entry in entries.items()}
