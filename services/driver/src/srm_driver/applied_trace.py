"""The lines of traced changes a driver applies (docs/observability.md): when events
that came with a trace give this driver partitions, or resume one it copies, one log
line names the change and its trace id, inside a span of that trace, so an operator's
command is followed from srm-control to the driver that carries it out.
"""

from __future__ import annotations

import logging

from srm_common import telemetry
from srm_common.control.events import (
    AssignmentChanged,
    Envelope,
    PartitionResumeRequested,
    TaskConfigsGenerated,
)
from srm_common.control.state import ControlState
from srm_common.control.task_ids import parse_task_id

log = logging.getLogger(__name__)

Partition = tuple[str, str, int]  # flow, topic, partition
SHOWN = 10  # partitions named in the line that says what a traced change gave


def trace_applied(
    driver: str, before: ControlState, after: ControlState, events: list[Envelope]
) -> None:
    """The line (and span) of a traced change among ``events`` that gave ``driver``
    partitions (``before`` -> ``after``), and of each traced resume of a partition it
    copies."""
    traced = [e for e in events if e.trace is not None]
    if not traced:
        return
    copies = copies_of(after, driver)
    for envelope in traced:
        event = envelope.event
        if (
            isinstance(event, PartitionResumeRequested)
            and (event.flow, event.topic, event.partition) in copies
        ):
            start = event.point.describe()
            _log_traced(
                envelope,
                "srm-driver apply resume",
                f"driver {driver} applies the resume of {event.flow}"
                f" {event.topic}:{event.partition} from {start} (log offset"
                f" {envelope.offset}, asked by {envelope.by or 'unknown'})",
            )
    gained = sorted(copies - copies_of(before, driver))
    if not gained:
        return
    shown = ", ".join(f"{flow} {topic}:{partition}" for flow, topic, partition in gained[:SHOWN])
    more = f" and {len(gained) - SHOWN} more" if len(gained) > SHOWN else ""
    # What gave them: new task configs (partitions new to the flow join the tasks
    # that run) or an assignment (tasks handed out after a revocation).
    moving = [e for e in traced if isinstance(e.event, TaskConfigsGenerated | AssignmentChanged)]
    cause = (moving or traced)[-1]
    event = cause.event
    if isinstance(event, TaskConfigsGenerated):
        what = f"task configs generation {event.generation} of {event.flow}"
    elif isinstance(event, AssignmentChanged):
        what = f"assignment generation {event.generation}"
    else:
        what = event.TYPE
    _log_traced(
        cause,
        "srm-driver apply assignment",
        f"driver {driver} applies {what} (log offset {cause.offset}, by"
        f" {cause.by or 'unknown'}): copies {len(gained)} more partitions: {shown}{more}",
    )


def copies_of(state: ControlState, driver: str) -> set[Partition]:
    """The source partitions ``driver``'s source tasks copy in ``state``."""
    copies: set[Partition] = set()
    for task_id in state.tasks_of(driver):
        flow, kind, _index = parse_task_id(task_id)
        task = state.source_task(task_id) if kind == "source" else None
        if task is not None:
            copies |= {(flow, topic, partition) for topic, partition in task.partitions}
    return copies


def _log_traced(cause: Envelope, span: str, line: str) -> None:
    """``line`` with the trace id of ``cause``, inside a span of that trace."""
    assert cause.trace is not None
    with telemetry.span(span, parent=cause.trace):
        log.info("%s trace_id=%s", line, cause.trace.trace_id)
