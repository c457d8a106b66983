"""Rendering the audit trail: the history of changes and the state at a moment.

Both come from replaying the event log (Kafka or its SQL projection): nothing else holds
history, so what is printed is what the system acted on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from srm_common.control.audit import changes, entry, format_time, parse_time
from srm_common.control.events import Envelope, describe
from srm_common.control.state import ControlState

__all__ = ["format_time", "parse_time", "render_history", "render_state"]


def render_history(
    envelopes: Iterable[Envelope],
    *,
    since_ms: int | None = None,
    flow: str | None = None,
    everything: bool = False,
    as_json: bool = False,
) -> str:
    rows = changes(envelopes, since_ms=since_ms, flow=flow, everything=everything)
    if as_json:
        return json.dumps([entry(e) for e in rows], indent=2)
    if not rows:
        return "no changes recorded" + ("" if everything else " (--all shows membership too)")
    return "\n".join(
        f"{format_time(e.at_ms)}  #{e.offset:<5} {describe(e)}  [{e.by or 'unknown'}]" for e in rows
    )


def render_state(state: ControlState, at_ms: int, *, as_json: bool = False) -> str:
    """The complete state folded up to ``at_ms``."""
    if as_json:
        return json.dumps(
            {
                "at": format_time(at_ms),
                "offset": state.offset,
                "digest": state.digest(),
                "state": state.to_json(),
            },
            indent=2,
            sort_keys=True,
        )
    lines = [
        f"state at {format_time(at_ms)} (after event #{state.offset}, digest {state.digest()[:12]})"
    ]
    if state.leader:
        lines.append(f"leader: {state.leader.coordinator} (epoch {state.leader.epoch})")
    lines.append("flows:")
    for name in sorted(state.flows):
        flow = state.flows[name]
        lines.append(f"  {name}: {'enabled' if flow.enabled else 'disabled'}")
        lines.append(f"    topics allow: {', '.join(flow.topics) or '-'}")
        lines.append(f"    topics deny:  {', '.join(flow.topics_exclude) or '-'}")
        lines.append(f"    groups allow: {', '.join(flow.groups) or '-'}")
        lines.append(f"    groups deny:  {', '.join(flow.groups_exclude) or '-'}")
        tasks = state.tasks.get(name)
        if tasks is not None:
            topics = sorted({t for task in tasks.source for t, _ in task.partitions})
            lines.append(
                f"    tasks (generation {tasks.generation}): {len(tasks.source)} source,"
                f" {len(tasks.checkpoint)} checkpoint{', heartbeat' if tasks.heartbeat else ''};"
                f" topics: {', '.join(topics) or '-'}"
            )
    lines.append(f"drivers ({len(state.drivers)}), assignment generation {state.generation}:")
    for driver in sorted(state.drivers):
        lines.append(f"  {driver}: {len(state.tasks_of(driver))} tasks")
    return "\n".join(lines)
