"""Rendering the audit trail: the history of changes and the state at a moment.

Both come from replaying the event log (Kafka or its SQL projection): nothing else holds
history, so what is printed is what the system acted on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime

from srm_common.control.events import (
    AssignmentChanged,
    DriverJoined,
    DriverLeft,
    Envelope,
    TaskConfigsGenerated,
    describe,
)
from srm_common.control.state import ControlState

# Membership and assignment change all the time; configuration changes are what people
# audit, so those are shown unless --all.
# (Compared by TYPE, the wire name such as "driver.joined", not the class name.)
_OPERATIONAL = {
    cls.TYPE for cls in (DriverJoined, DriverLeft, AssignmentChanged, TaskConfigsGenerated)
}


def parse_time(text: str) -> int:
    """Epoch milliseconds from ISO 8601 (no zone = UTC) or a number of milliseconds."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is not a time; use ISO 8601 such as 2026-11-20T09:30:00Z"
            " (UTC when no zone is given) or epoch milliseconds"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def format_time(at_ms: int) -> str:
    moment = datetime.fromtimestamp(at_ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at_ms % 1000:03d}Z"


def render_history(
    envelopes: Iterable[Envelope],
    *,
    since_ms: int | None = None,
    flow: str | None = None,
    everything: bool = False,
    as_json: bool = False,
) -> str:
    rows = [
        e
        for e in envelopes
        if (since_ms is None or e.at_ms >= since_ms)
        and (flow is None or getattr(e.event, "flow", None) == flow)
        and (everything or e.event.TYPE not in _OPERATIONAL)
    ]
    if as_json:
        return json.dumps(
            [
                {
                    "offset": e.offset,
                    "at": format_time(e.at_ms),
                    "type": e.event.TYPE,
                    "by": e.by,
                    "change": describe(e),
                }
                for e in rows
            ],
            indent=2,
        )
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
