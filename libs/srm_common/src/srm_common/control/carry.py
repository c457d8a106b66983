"""Carrying a log's configuration into a new log: what ``srm-control restore`` writes in
place of a lost log, and what a target's first leader takes over from the single log of
an earlier release. Pure.

Only configuration is carried, never who runs what: each flow's switch and lists
(srm-control's changes included), the config file's baseline, halted partitions,
resumes asked for and records lost to retention. Task configs, membership and assignment
are planned again by the new log's leader, and drivers join it::

    log.started   L2 (target backup), restored from L1 / migrated from L0
    config.applied  (the file's baseline, of the flows carried)
    flow.enabled primary->backup
    topics.allowed primary->backup: orders, ...
    partition.halted / resume_requested / records.lost, as the old log had them

``flows`` picks the flows carried (those into one target, when the old log held every
flow); :func:`configuration` is what two logs must agree on after a carry.
"""

from __future__ import annotations

from collections.abc import Callable

from srm_common.control.schema import (
    ConfigApplied,
    Event,
    FlowDisabled,
    FlowEnabled,
    PartitionHalted,
    PartitionResumeRequested,
    RecordsLost,
    pattern_event_class,
)
from srm_common.control.state import ControlState

LISTS = (
    ("topics", "allow", "topics"),
    ("topics", "deny", "topics_exclude"),
    ("groups", "allow", "groups"),
    ("groups", "deny", "groups_exclude"),
)


def every_flow(_flow: str) -> bool:
    return True


def into(target: str) -> Callable[[str], bool]:
    """The flows that write into ``target`` (``source->target``)."""
    return lambda flow: flow.rpartition("->")[2] == target


def configuration_events(
    state: ControlState, flows: Callable[[str], bool] = every_flow
) -> list[Event]:
    """The events that rebuild ``state``'s configuration of the ``flows`` chosen, in the
    order of the module docstring (the log's first event is the caller's)."""
    events: list[Event] = []
    if state.config_path is not None:
        baseline = {name: flow for name, flow in state.baseline.items() if flows(name)}
        events.append(ConfigApplied(state.config_path, baseline))
    for name, flow in sorted(state.flows.items()):
        if not flows(name):
            continue
        events.append(FlowEnabled(name) if flow.enabled else FlowDisabled(name))
        for kind, list_, field in LISTS:
            patterns = flow.patterns(field)
            if patterns:
                events.append(pattern_event_class(kind, list_, True)(name, patterns))  # type: ignore[arg-type]
    for _key, h in sorted(state.halts.items()):
        if flows(h.flow):
            events.append(PartitionHalted(h.flow, h.topic, h.partition, h.kind, h.reason, h.driver))
    for _key, r in sorted(state.resumes.items()):
        if flows(r.flow):
            events.append(
                PartitionResumeRequested(
                    r.flow, r.topic, r.partition, r.mode, r.offset, r.request_id
                )
            )
    for key, ranges in sorted(state.losses.items()):
        flow, topic, partition = key.split("|")
        if flows(flow):
            for first, end in ranges:
                events.append(
                    RecordsLost(flow, topic, int(partition), first, end, "unknown (carried)")
                )
    return events


def configuration(
    state: ControlState, flows: Callable[[str], bool] = every_flow
) -> dict[str, object]:
    """What a carry brings over (of the ``flows`` chosen), to compare two logs by."""
    return {
        "config_path": state.config_path,
        "baseline": {n: f for n, f in state.baseline.items() if flows(n)},
        "flows": {n: f for n, f in state.flows.items() if flows(n)},
        "halts": {k: (h.kind, h.reason, h.driver) for k, h in state.halts.items() if flows(h.flow)},
        "resumes": {
            k: (r.mode, r.offset, r.request_id) for k, r in state.resumes.items() if flows(r.flow)
        },
        "losses": {k: v for k, v in state.losses.items() if flows(k.split("|")[0])},
    }
