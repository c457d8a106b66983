"""The replication plan: which topics each flow copies now, and under which remote names.

Pure: configuration plus the topic names each cluster has in, plan out. ``make up``
prints it; the driver and coordinator decide with the same rules (``should_replicate``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.domain.filters import TopicFilter
from srm_common.domain.policy import ReplicationPolicy, is_cycle


@dataclass(frozen=True)
class TopicRoute:
    """``topic`` on the source is copied to ``remote_topic`` on the target."""

    topic: str
    remote_topic: str


@dataclass(frozen=True)
class SkippedTopic:
    """A source topic the flow does not copy, and why (for operators)."""

    topic: str
    reason: str


@dataclass(frozen=True)
class FlowPlan:
    """One ordered pair of clusters; a disabled pair only emits heartbeats."""

    source: str
    target: str
    enabled: bool
    heartbeats: bool
    routes: tuple[TopicRoute, ...]
    skipped: tuple[SkippedTopic, ...]
    source_known: bool
    allowed: tuple[str, ...] = ()
    """The flow's ``topics`` patterns (empty: nothing allowed yet)."""

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"


def plan_replication(
    config: SrmConfig, topics_by_cluster: Mapping[str, Iterable[str]]
) -> tuple[FlowPlan, ...]:
    """A plan for every flow of ``config`` given the topics each cluster has.

    A cluster missing from ``topics_by_cluster`` (could not be listed) gives flows with
    ``source_known=False`` and no routes: unknown, never guessed as empty.
    """
    plans = []
    for flow in config.flows.values():
        topics = topics_by_cluster.get(flow.source)
        routes: list[TopicRoute] = []
        skipped: list[SkippedTopic] = []
        if flow.enabled and topics is not None:
            policy = flow.replication_policy()
            for topic in sorted(topics):
                reason = reason_not_replicated(flow, policy, topic)
                if reason is None:
                    routes.append(TopicRoute(topic, policy.format_remote_topic(flow.source, topic)))
                else:
                    skipped.append(SkippedTopic(topic, reason))
        plans.append(
            FlowPlan(
                source=flow.source,
                target=flow.target,
                enabled=flow.enabled,
                heartbeats=flow.emit_heartbeats_enabled,
                routes=tuple(routes),
                skipped=tuple(skipped),
                source_known=topics is not None,
                allowed=flow.topics,
            )
        )
    return tuple(plans)


def reason_not_replicated(flow: FlowConfig, policy: ReplicationPolicy, topic: str) -> str | None:
    """Why ``flow`` would not copy ``topic``, or None when it would.

    Same rule as MM2: (allowed by the filter, or a heartbeats topic when heartbeats
    replication is on) and not internal and not a cycle back to the target.
    """
    if policy.is_internal_topic(topic):
        return "internal topic"
    if is_cycle(policy, topic, flow.target):
        return f"came from {flow.target}: copying it back would loop"
    if flow.heartbeats_replication_enabled and policy.is_heartbeats_topic(topic):
        return None
    if flow.topic_filter().matches(topic):
        return None
    if TopicFilter(include=flow.topics_exclude, exclude=()).matches(topic):
        return "excluded by topics.exclude"
    return "not in topics"


def render_plan(plans: Iterable[FlowPlan], *, show_skipped: bool = False) -> str:
    """The plan as text for a terminal (``make up``): per enabled flow, what it copies
    now, the topics it allows and how to change them."""
    lines = []
    for plan in plans:
        if not plan.enabled:
            state = "disabled (heartbeats only)" if plan.heartbeats else "disabled"
            lines.append(f"{plan.name}: {state}")
            continue
        if not plan.source_known:
            lines.append(f"{plan.name}: enabled; topics of {plan.source} unknown (not reachable)")
            lines.append(allowed_line(plan))
            continue
        count = len(plan.routes)
        lines.append(f"{plan.name}: enabled, {count} topic{'s' if count != 1 else ''} to replicate")
        lines.append(allowed_line(plan))
        width = max((len(route.topic) for route in plan.routes), default=0)
        for route in plan.routes:
            lines.append(f"    {route.topic:<{width}}  ->  {plan.target}:{route.remote_topic}")
        if show_skipped:
            for skip in plan.skipped:
                lines.append(f"    ({skip.topic}: {skip.reason})")
    return "\n".join(lines)


def allowed_line(plan: FlowPlan) -> str:
    return f"    topics allowed: {describe_allowed(plan.source, plan.target, plan.allowed)}"


def describe_allowed(source: str, target: str, allowed: tuple[str, ...]) -> str:
    """The topics a flow allows, and the srm-control command that changes them."""
    command = f"srm-control topics --source {source} --target {target}"
    if not allowed:
        return f"none yet (allow some: {command} --add 'PATTERN')"
    return f"{', '.join(allowed)}  (change: {command} --add/--remove 'PATTERN')"


def replicated_partitions(
    flow: FlowConfig, topic_partition_counts: Mapping[str, int]
) -> list[tuple[str, int]]:
    """Every partition of every topic ``flow`` replicates, sorted: what its source tasks
    copy. ``topic_partition_counts`` is the source cluster's listing."""
    policy = flow.replication_policy()
    return sorted(
        (topic, partition)
        for topic, count in topic_partition_counts.items()
        if reason_not_replicated(flow, policy, topic) is None
        for partition in range(count)
    )
