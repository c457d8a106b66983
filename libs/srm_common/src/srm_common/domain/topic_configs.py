"""Which topic configs a remote topic gets, at creation and on each config sync (MM2 rules).

Pure: config entries as a cluster describes them in, configs or changes out. The rules
are MirrorSourceConnector's (``mm2-semantics.md`` §5.4, ``use.defaults.from=target``):

* an entry is *copyable* when it is not at its default, not read-only, not sensitive, not
  a ``STATIC_BROKER_CONFIG`` (the source broker's own file says nothing about the
  topic) and its name passes ``config.properties.exclude``;
* a new remote topic is created with every copyable entry of its source topic;
* config sync SETs every copyable entry on the remote topic and DELETEs (back to the
  target's default) every allowed entry that is at its default on the source; entries
  that are excluded, read-only, sensitive or static are never touched.

"Not at its default" is Kafka's ``isDefault``: the source is anything but
``DEFAULT_CONFIG``. So a value inherited from a *dynamic* broker config of the source
cluster (``DYNAMIC_DEFAULT_BROKER_CONFIG``, ``DYNAMIC_BROKER_CONFIG``) is copied, as
MM2 copies it; Kafka 4.x reports ``min.insync.replicas`` that way on every KRaft
cluster, which is one reason it is in the default exclude list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from srm_common.domain.filters import ConfigPropertyFilter

# Kafka's ConfigEntry.ConfigSource names, as describeConfigs reports them.
DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"
DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"
STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
DEFAULT_CONFIG = "DEFAULT_CONFIG"
UNKNOWN_CONFIG = "UNKNOWN_CONFIG"


@dataclass(frozen=True, slots=True)
class TopicConfigEntry:
    """One config of one topic as a cluster describes it.

    ``source`` is where the value comes from (``DYNAMIC_TOPIC_CONFIG`` when set on the
    topic itself, ``DEFAULT_CONFIG`` for Kafka's built-in default...). ``value`` is None
    for sensitive entries and for defaults that have no value.
    """

    name: str
    value: str | None
    source: str = DYNAMIC_TOPIC_CONFIG
    is_default: bool = False
    is_read_only: bool = False
    is_sensitive: bool = False

    @property
    def is_set_on_topic(self) -> bool:
        """Is the value a topic-level override (what ``kafka-configs --alter`` sets)?"""
        return self.source == DYNAMIC_TOPIC_CONFIG


@dataclass(frozen=True, slots=True)
class ConfigChanges:
    """An incremental config change of one remote topic: SET these, DELETE those.

    ``to_set`` and ``to_delete`` never share a name; both are sorted by name.
    """

    to_set: tuple[tuple[str, str], ...] = ()
    to_delete: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.to_set or self.to_delete)


def is_copyable(entry: TopicConfigEntry, config_filter: ConfigPropertyFilter) -> bool:
    """Does a remote topic get this source entry's value (at creation and on sync)?

    True for ``retention.ms=1000`` set on the topic; False for anything at its default,
    read-only, sensitive, from the source broker's static file, or excluded by name.
    """
    return (
        not entry.is_default
        and entry.value is not None
        and not _is_untouchable(entry)
        and config_filter.should_replicate(entry.name)
    )


def select_configs_to_copy(
    source_entries: Iterable[TopicConfigEntry], config_filter: ConfigPropertyFilter
) -> dict[str, str]:
    """Configs for a new remote topic: every copyable entry of its source topic.

    Example (default filter): ``retention.ms=1000`` (topic) and ``min.insync.replicas=2``
    (topic) -> ``{"retention.ms": "1000"}``; entries at their default give nothing.
    """
    return {
        entry.name: entry.value
        for entry in source_entries
        if entry.value is not None and is_copyable(entry, config_filter)
    }


def plan_config_changes(
    source_entries: Iterable[TopicConfigEntry],
    target_entries: Iterable[TopicConfigEntry],
    config_filter: ConfigPropertyFilter,
) -> ConfigChanges:
    """What config sync changes on a remote topic so that it mirrors its source topic.

    * SET each copyable source entry unless the remote topic already has the same value
      as a topic-level override (a value equal only by default is SET too, pinning it
      as MM2 does);
    * DELETE each allowed name that is at its default on the source but a topic-level
      override on the remote topic (deleting an unset config would be a no-op, so it is
      left out);
    * leave everything else alone: excluded names, read-only, sensitive and static
      source entries, and names the source does not describe.

    Applying the result and planning again gives no changes.
    """
    target_by_name: Mapping[str, TopicConfigEntry] = {entry.name: entry for entry in target_entries}
    to_set: dict[str, str] = {}
    to_delete: set[str] = set()
    for entry in source_entries:
        current = target_by_name.get(entry.name)
        if is_copyable(entry, config_filter) and entry.value is not None:
            if current is None or not current.is_set_on_topic or current.value != entry.value:
                to_set[entry.name] = entry.value
        elif (
            entry.is_default
            and not _is_untouchable(entry)
            and config_filter.should_replicate(entry.name)
            and current is not None
            and current.is_set_on_topic
        ):
            to_delete.add(entry.name)
    to_delete -= to_set.keys()
    return ConfigChanges(to_set=tuple(sorted(to_set.items())), to_delete=tuple(sorted(to_delete)))


def _is_untouchable(entry: TopicConfigEntry) -> bool:
    return entry.is_read_only or entry.is_sensitive or entry.source == STATIC_BROKER_CONFIG
