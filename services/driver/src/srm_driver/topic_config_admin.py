"""Topic configs read and changed with the admin client, for the topic sync
(:mod:`srm_driver.topic_sync`): confluent-kafka's ``ConfigEntry`` to and from the
core's :class:`TopicConfigEntry` and :class:`ConfigChanges`
(:mod:`srm_common.domain.topic_configs` decides what to copy and what to change).

Config sync SETs and DELETEs with ``incrementalAlterConfigs`` (``mm2-semantics.md`` §5.4).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from srm_common.adapters import answering
from srm_common.domain.topic_configs import UNKNOWN_CONFIG, ConfigChanges, TopicConfigEntry

from srm_driver.topic_requests import NOTHING, TopicRequests

MAX_MESSAGE_BYTES = "max.message.bytes"


class Described:
    """Config entries of the topics that answered, and failures of those that did not;
    ``record_limits``: the ``max.message.bytes`` of those that set it."""

    def __init__(self) -> None:
        self.entries: dict[str, list[TopicConfigEntry]] = {}
        self.failures: list[str] = []
        self.record_limits: dict[str, int] = {}


def describe_configs(
    requests: TopicRequests, alias: str, admin: AdminClient, topics: Iterable[str]
) -> Described:
    """Config entries per topic; a topic that does not exist is silently left out."""
    described = Described()
    resources = [ConfigResource(ResourceType.TOPIC, name) for name in topics]
    if not resources:
        return described
    futures = requests.submit(
        alias,
        "describe topic configs",
        # A cluster that did not answer is asked for metadata first (adapters/answering.py).
        lambda: answering.send(
            admin,
            resources[0].name,
            lambda: admin.describe_configs(resources, request_timeout=requests.request_timeout),
            requests.request_timeout,
        ),
    )
    for resource, future in futures.items():
        name = resource.name
        result = requests.result(alias, name, "read the configs of", future, described.failures)
        if isinstance(result, dict):
            entries: dict[str, ConfigEntry] = result
            described.entries[name] = [_entry(e) for e in entries.values()]
            limit = entries.get(MAX_MESSAGE_BYTES)
            if limit is not None and limit.value:
                described.record_limits[name] = int(limit.value)
    return described


def alter_configs(
    requests: TopicRequests,
    alias: str,
    admin: AdminClient,
    planned: Mapping[str, ConfigChanges],
    changes: list[str],
    failures: list[str],
) -> None:
    """Apply the ``planned`` changes (remote topic -> changes) on cluster ``alias``: one
    line per topic changed in ``changes``, per topic failed in ``failures``."""
    if not planned:
        return
    resources = [
        ConfigResource(ResourceType.TOPIC, remote, incremental_configs=_ops(change))
        for remote, change in planned.items()
    ]
    futures = requests.chunked(
        alias,
        "alter topic configs",
        resources,
        lambda resource: len(resource.incremental_configs),
        lambda resource: resource,
        lambda chunk: admin.incremental_alter_configs(
            chunk, request_timeout=requests.request_timeout
        ),
    )
    for resource, future in futures.items():
        remote = resource.name
        action = "change the configs of"
        if requests.result(alias, remote, action, future, failures) in NOTHING:
            continue
        changes.append(f"synced configs of {alias}:{remote}: " + _describe_changes(planned[remote]))


def _entry(entry: ConfigEntry) -> TopicConfigEntry:
    # confluent-kafka 2.16 hands the source over as a plain int, not a ConfigSource.
    try:
        source = ConfigSource(entry.source).name
    except ValueError:
        source = UNKNOWN_CONFIG
    return TopicConfigEntry(
        name=entry.name,
        value=entry.value,
        source=source,
        is_default=entry.is_default,
        is_read_only=entry.is_read_only,
        is_sensitive=entry.is_sensitive,
    )


def _ops(changes: ConfigChanges) -> list[ConfigEntry]:
    sets = [
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in changes.to_set
    ]
    deletes = [
        ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE)
        for name in changes.to_delete
    ]
    return sets + deletes


def _describe_changes(changes: ConfigChanges) -> str:
    parts = []
    if changes.to_set:
        parts.append("set " + ", ".join(f"{name}={value}" for name, value in changes.to_set))
    if changes.to_delete:
        parts.append("deleted " + ", ".join(changes.to_delete))
    return "; ".join(parts)
