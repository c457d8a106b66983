"""Remote-topic naming (MM2 ReplicationPolicy), cycle prevention and the origin header's name.

The origin rule itself (stamp, keep, drop a copy back, refuse a malformed header) is
applied by the copy slots (:mod:`srm_driver.copier`) through
:mod:`srm_common.domain.origin`; ``golden/origin_rule.json`` holds the cases it is
tested against.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from srm_common.errors import ConfigError

HEARTBEATS_TOPIC = "heartbeats"
ORIGIN_HEADER = "srm.origin"
"""Record header naming the alias of the cluster where a record was first produced."""

_POLICY_KEY = "replication.policy.class"
_MAX_HOPS = 256  # far beyond any real topology; only a broken policy gets here


@runtime_checkable
class ReplicationPolicy(Protocol):
    """How topics are named on a target cluster; MM2's ``ReplicationPolicy``.

    Examples use the alias ``us-west`` under the default policy. Invariants every
    implementation keeps: ``upstream_topic`` returns ``None`` or a name that ends the walk
    (``None`` or the same name) in finitely many steps, and ``heartbeats_topic()`` is the
    same on every cluster.
    """

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """Name on the target of ``topic`` copied from ``source_alias``: ``us-west.orders``."""
        ...

    def topic_source(self, topic: str) -> str | None:
        """Alias the topic came from (``us-west.orders`` -> ``us-west``); ``None`` if local."""
        ...

    def upstream_topic(self, topic: str) -> str | None:
        """Name one hop upstream (``us-west.orders`` -> ``orders``); ``None`` if local."""
        ...

    def original_topic(self, topic: str) -> str:
        """Name where the data was first produced (``b.us-west.orders`` -> ``orders``)."""
        ...

    def heartbeats_topic(self) -> str:
        """Topic the heartbeat task writes on every cluster: ``heartbeats``."""
        ...

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """Checkpoints of groups on ``us-west``: ``us-west.checkpoints.internal``."""
        ...

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """Offset syncs for flows to ``us-west``: ``mm2-offset-syncs.us-west.internal``."""
        ...

    def is_heartbeats_topic(self, topic: str) -> bool:
        """Is it a heartbeats topic at any hop (``heartbeats``, ``us-west.heartbeats``)?"""
        ...

    def is_checkpoints_topic(self, topic: str) -> bool:
        """Is it a checkpoints topic (``us-west.checkpoints.internal``)?"""
        ...

    def is_internal_topic(self, topic: str) -> bool:
        """Must it never be replicated (``__consumer_offsets``, ``.hidden``, ``x.internal``)?"""
        ...

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """Is it an MM2 topic: offset syncs, checkpoints or ``mm2-offsets.us-west.internal``?"""
        ...


def mm2_offsets_topic(source_alias: str) -> str:
    """Connect offsets topic of flows from ``us-west``: ``mm2-offsets.us-west.internal``.

    MM2 always uses ``.`` here, whatever the replication separator.
    """
    return f"mm2-offsets.{source_alias}.internal"


def mm2_configs_topic(source_alias: str) -> str:
    """Connect configs topic of flows from ``us-west``: ``mm2-configs.us-west.internal``."""
    return f"mm2-configs.{source_alias}.internal"


def mm2_status_topic(source_alias: str) -> str:
    """Connect status topic of flows from ``us-west``: ``mm2-status.us-west.internal``."""
    return f"mm2-status.{source_alias}.internal"


def is_mm2_connect_topic(topic: str) -> bool:
    """Is it one of MM2's Connect topics (``mm2-configs|offsets|status.<alias>.internal``)?"""
    prefixes = ("mm2-configs.", "mm2-offsets.", "mm2-status.")
    return topic.startswith(prefixes) and topic.endswith(".internal")


def split_like_java(text: str, separator: str) -> list[str]:
    """Split on the literal ``separator`` and drop trailing empty parts, as Java's split.

    ``"A."`` -> ``["A"]``, ``".x"`` -> ``["", "x"]``, ``"."`` -> ``[]``.
    """
    parts = text.split(separator)
    while parts and not parts[-1]:
        parts.pop()
    return parts


class DefaultReplicationPolicy:
    """MM2's default policy: remote topics are prefixed ``<source alias><separator>``.

    ``internal_topic_separator_enabled`` (KIP-949) decides whether the checkpoints and
    offset-syncs names use the separator (true) or ``.`` (false). Any name containing the
    separator looks remote: ``my.topic`` has source ``my``; aliases are not checked.
    """

    def __init__(self, separator: str = ".", internal_topic_separator_enabled: bool = True):
        if not separator:
            raise ConfigError(
                "the separator must not be empty; MM2's default is '.'",
                key="replication.policy.separator",
            )
        self.separator = separator
        self.internal_topic_separator_enabled = internal_topic_separator_enabled
        self.internal_separator = separator if internal_topic_separator_enabled else "."

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(separator={self.separator!r}, "
            f"internal_topic_separator_enabled={self.internal_topic_separator_enabled})"
        )

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """``("us-west", "orders")`` -> ``us-west.orders``; inverse of the two below."""
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """First part before the separator: ``us-west.orders`` -> ``us-west``.

        ``None`` when fewer than two parts remain after dropping trailing empty parts
        (``orders``, ``us-west.``); ``.orders`` gives ``""``.
        """
        parts = split_like_java(topic, self.separator)
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        """``us-west.orders`` -> ``orders``; ``None`` when ``topic_source`` is ``None``."""
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self.separator) :]

    def original_topic(self, topic: str) -> str:
        """Strip every prefix: ``eu.us-west.orders`` -> ``orders``; local names unchanged."""
        current = topic
        while True:
            upstream = self.upstream_topic(current)
            if upstream is None or upstream == current:
                return current
            current = upstream

    def heartbeats_topic(self) -> str:
        """``heartbeats``, never separated or prefixed."""
        return HEARTBEATS_TOPIC

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """``us-west`` -> ``us-west.checkpoints.internal`` (internal separator)."""
        isep = self.internal_separator
        return f"{cluster_alias}{isep}checkpoints{isep}internal"

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """``us-west`` -> ``mm2-offset-syncs.us-west.internal`` (internal separator)."""
        isep = self.internal_separator
        return f"mm2-offset-syncs{isep}{cluster_alias}{isep}internal"

    def is_heartbeats_topic(self, topic: str) -> bool:
        """True for ``heartbeats``, ``us-west.heartbeats``, ``eu.us-west.heartbeats``."""
        return self.original_topic(topic) == self.heartbeats_topic()

    def is_checkpoints_topic(self, topic: str) -> bool:
        """True for ``us-west.checkpoints.internal`` (any alias, internal separator)."""
        isep = self.internal_separator
        return topic.endswith(f"{isep}checkpoints{isep}internal")

    def is_offset_syncs_topic(self, topic: str) -> bool:
        """True for ``mm2-offset-syncs.us-west.internal`` (internal separator)."""
        isep = self.internal_separator
        return topic.startswith(f"mm2-offset-syncs{isep}") and topic.endswith(f"{isep}internal")

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """Offset syncs, checkpoints, or ``mm2-configs|offsets|status.us-west.internal``."""
        return (
            self.is_offset_syncs_topic(topic)
            or self.is_checkpoints_topic(topic)
            or is_mm2_connect_topic(topic)
        )

    def is_internal_topic(self, topic: str) -> bool:
        """MM2 topics, Kafka's (``__consumer_offsets``, ``.hidden``) and Connect's.

        Names ending ``-internal`` or ``.internal`` are internal whatever the separator
        (KAFKA-13397: with separator ``_`` MM2 once mirrored ``x.internal``).
        """
        return (
            self.is_mm2_internal_topic(topic)
            or topic.startswith(("__", "."))
            or topic.endswith((f"{self.internal_separator}internal", "-internal", ".internal"))
        )


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """MM2's identity policy: names are kept, so ``orders`` stays ``orders`` on the target.

    Names ending in ``heartbeats`` follow the default rules (``us-west.heartbeats``) so
    heartbeats still trace paths. ``topic_source`` is the configured ``source_alias``
    (``None`` if unset) and ``upstream_topic`` the name itself, so :func:`is_cycle` can
    never see a loop: use the origin header (:data:`ORIGIN_HEADER`) instead.
    """

    def __init__(
        self,
        source_alias: str | None = None,
        separator: str = ".",
        internal_topic_separator_enabled: bool = True,
    ):
        super().__init__(separator, internal_topic_separator_enabled)
        self.source_alias = source_alias

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(source_alias={self.source_alias!r}, "
            f"separator={self.separator!r}, "
            f"internal_topic_separator_enabled={self.internal_topic_separator_enabled})"
        )

    def _looks_like_heartbeats(self, topic: str) -> bool:
        return topic.endswith(self.heartbeats_topic())

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """``("us-west", "orders")`` -> ``orders``; ``heartbeats`` -> ``us-west.heartbeats``."""
        if self._looks_like_heartbeats(topic):
            return super().format_remote_topic(source_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        """The configured source alias (``us-west``), or default rules for heartbeats."""
        if self._looks_like_heartbeats(topic):
            return super().topic_source(topic)
        return self.source_alias

    def upstream_topic(self, topic: str) -> str | None:
        """``orders`` -> ``orders``; ``us-west.heartbeats`` -> ``heartbeats``."""
        if self._looks_like_heartbeats(topic):
            return super().upstream_topic(topic)
        return topic

    def original_topic(self, topic: str) -> str:
        """``orders`` -> ``orders``; ``eu.us-west.heartbeats`` -> ``heartbeats``."""
        if self._looks_like_heartbeats(topic):
            return super().original_topic(topic)
        return topic


class TopicMatcher(Protocol):
    """Anything that says whether a topic name is selected (``filters.TopicFilter``)."""

    def matches(self, topic: str) -> bool: ...


def is_cycle(policy: ReplicationPolicy, topic: str, target_alias: str) -> bool:
    """Would copying ``topic`` to ``target_alias`` send it back where it has been?

    Walks ``topic_source``/``upstream_topic``: under the default policy
    ``us-west.orders`` is a cycle for target ``us-west``, and ``eu.us-west.orders`` too.
    Stops (no cycle) on a ``None`` source or upstream, or an unchanged upstream (identity).
    Raises :class:`ConfigError` if the policy never stops: that policy is broken.
    """
    current = topic
    seen: set[str] = set()
    for _ in range(_MAX_HOPS):
        source = policy.topic_source(current)
        if source is None:
            return False
        if source == target_alias:
            return True
        upstream = policy.upstream_topic(current)
        if upstream is None or upstream == current:
            return False
        seen.add(current)
        if upstream in seen:
            break
        current = upstream
    raise ConfigError(
        f"replication policy {policy!r} never reaches the original name of topic"
        f" {topic!r}: upstream_topic must end with None or the same name",
        key=_POLICY_KEY,
    )


def should_replicate_topic(
    policy: ReplicationPolicy,
    topic_filter: TopicMatcher,
    topic: str,
    source_alias: str,
    target_alias: str,
    heartbeats_replication_enabled: bool = True,
) -> bool:
    """MM2's rule for a topic of ``source_alias`` on the flow to ``target_alias``.

    ``(filter passes or (heartbeats replicated and a heartbeats topic)) and not internal
    and not a cycle``. Raises :class:`ConfigError` when source and target are the same.
    """
    if source_alias == target_alias:
        raise ConfigError(
            f"a flow needs two different clusters, got {source_alias!r} -> {target_alias!r}",
            key=f"{source_alias}->{target_alias}.enabled",
        )
    wanted = topic_filter.matches(topic) or (
        heartbeats_replication_enabled and policy.is_heartbeats_topic(topic)
    )
    return (
        wanted and not policy.is_internal_topic(topic) and not is_cycle(policy, topic, target_alias)
    )
