"""What the gateway answers about replications and clusters, from the configuration and
the folded event log. Pure: a state and a config in, plain JSON-ready dicts out.

A flow's status is what the log says: ``disabled``; ``pending`` (enabled, no task
configs or tasks without a driver yet); ``halted`` (some partition halted, see
``halted``: the first :data:`HALTED_SHOWN` by topic and partition, and ``halted_count``);
``running``. Topics are the ones its task configs cover, each with its
remote topic under the flow's replication policy (the identity policy included).
"""

from __future__ import annotations

from collections.abc import Mapping

from srm_common.config.control import effective_flow
from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.control.state import ControlState
from srm_common.control.task_ids import parse_task_id
from srm_common.errors import SrmError

HALTED_SHOWN = 100
"""A replication lists at most this many halted partitions (``halted_count`` says how many
there are; ``/v2/replications/{source}/{target}/partitions`` pages through them all)."""


class NotFound(SrmError):
    """An alias, flow or topic the configuration or the log does not have; says which."""


def known_alias(config: SrmConfig, alias: str) -> None:
    if alias not in config.clusters:
        known = ", ".join(config.aliases) or "none"
        raise NotFound(f"unknown cluster alias {alias[:200]!r}; known aliases: {known}")


def flow_of(config: SrmConfig, source: str, target: str) -> FlowConfig:
    for alias in (source, target):
        known_alias(config, alias)
    flow = config.flows.get((source, target))
    if flow is None:
        raise NotFound(f"no replication {source}->{target} is configured")
    return flow


def replications(config: SrmConfig, state: ControlState, target: str | None = None) -> list[dict]:
    if target is not None:
        known_alias(config, target)
    return [
        replication(config, state, flow.source, flow.target)
        for flow in sorted(config.flows.values(), key=lambda f: f.name)
        if target is None or flow.target == target
    ]


def replication(config: SrmConfig, state: ControlState, source: str, target: str) -> dict:
    flow = effective_flow(flow_of(config, source, target), state.flow(f"{source}->{target}"))
    tasks = state.tasks.get(flow.name)
    partitions = sorted({tp for task in tasks.source for tp in task.partitions}) if tasks else []
    groups = sorted({g for task in tasks.checkpoint for g in task.groups}) if tasks else []
    task_ids = tasks.task_ids() if tasks else ()
    unassigned = [task for task in task_ids if task not in state.assignment]
    halted = _halted(state, flow.name)
    if not flow.enabled:
        status = "disabled"
    elif tasks is None or unassigned:
        status = "pending"
    elif halted:
        status = "halted"
    else:
        status = "running"
    return {
        "source": source,
        "target": target,
        "enabled": flow.enabled,
        "status": status,
        "topics": len({topic for topic, _ in partitions}),
        "partitions": len(partitions),
        "groups": len(groups),
        "tasks": len(task_ids),
        "tasks_unassigned": len(unassigned),
        "halted": halted[:HALTED_SHOWN],
        "halted_count": len(halted),
        "allow": {"topics": list(flow.topics), "groups": list(flow.groups)},
        "deny": {"topics": list(flow.topics_exclude), "groups": list(flow.groups_exclude)},
        "task_generation": tasks.generation if tasks else None,
    }


def replicated_topics(config: SrmConfig, state: ControlState, source: str, target: str) -> list:
    flow = flow_of(config, source, target)
    tasks = state.tasks.get(flow.name)
    by_topic: dict[str, list[int]] = {}
    for task in tasks.source if tasks else ():
        for topic, partition in task.partitions:
            by_topic.setdefault(topic, []).append(partition)
    policy = flow.replication_policy()
    halted: Mapping[str, list[int]] = {}
    for item in _halted(state, flow.name):
        halted.setdefault(item["topic"], []).append(item["partition"])  # type: ignore[attr-defined]
    return [
        {
            "topic": topic,
            "remote_topic": policy.format_remote_topic(source, topic),
            "partitions": len(parts),
            "halted_partitions": sorted(halted.get(topic, [])),
        }
        for topic, parts in sorted(by_topic.items())
    ]


def cluster_info(config: SrmConfig, state: ControlState, alias: str) -> dict:
    known_alias(config, alias)
    cluster = config.clusters[alias]
    flows = sorted(config.flows.values(), key=lambda f: f.name)
    return {
        "alias": alias,
        # Addresses only: client settings may hold secrets and are never shown.
        "bootstrap_servers": list(cluster.bootstrap_servers),
        "replicating_from": [f.source for f in flows if f.target == alias and _on(f, state)],
        "replicating_to": [f.target for f in flows if f.source == alias and _on(f, state)],
    }


def drivers(state: ControlState) -> list[dict]:
    return [
        {
            "driver": name,
            "url": info.url,
            "host": info.host,
            "instance": info.instance,
            "tasks": sorted(state.tasks_of(name)),
            "flows": sorted({parse_task_id(t)[0] for t in state.tasks_of(name)}),
        }
        for name, info in sorted(state.drivers.items())
    ]


def _on(flow: FlowConfig, state: ControlState) -> bool:
    return effective_flow(flow, state.flow(flow.name)).enabled


def _halted(state: ControlState, flow: str) -> list[dict[str, object]]:
    return [
        {
            "topic": halt.topic,
            "partition": halt.partition,
            "kind": halt.kind,
            "reason": halt.reason,
            "driver": halt.driver,
        }
        for halt in sorted(state.halts.values(), key=lambda h: (h.topic, h.partition))
        if halt.flow == flow
    ]
