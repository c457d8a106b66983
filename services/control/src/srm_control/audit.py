"""Rendering the audit trail: the history of changes and the state at a moment, over
every log (one per target cluster, and the single log of an earlier release).

Both come from replaying the logs (Kafka or the gateway's SQL read model): nothing else
holds history, so what is printed is what the system acted on. The logs are merged in
time, each entry naming its log (:mod:`srm_common.control.history` says what clock skew
between leaders can do to that order, and why no state depends on it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from srm_common.control.audit import changes, entry, format_time, parse_time
from srm_common.control.events import Envelope, describe
from srm_common.control.history import merged
from srm_common.control.state import ControlState

__all__ = ["format_time", "parse_time", "render_history", "render_state", "render_states"]


def render_history(
    histories: Mapping[str, Sequence[Envelope]],
    *,
    since_ms: int | None = None,
    flow: str | None = None,
    everything: bool = False,
    as_json: bool = False,
) -> str:
    """The changes of every log (by name) in time order, one line each."""
    shown = {
        name: changes(envelopes, since_ms=since_ms, flow=flow, everything=everything)
        for name, envelopes in histories.items()
    }
    rows = merged(shown)
    if as_json:
        return json.dumps([entry(e.envelope, e.log) for e in rows], indent=2)
    if not rows:
        return "no changes recorded" + ("" if everything else " (--all shows membership too)")
    width = max(len(name) for name in histories)
    return "\n".join(
        f"{format_time(e.envelope.at_ms)}  {e.log:<{width}}  #{e.envelope.offset:<5}"
        f" {describe(e.envelope)}  [{e.envelope.by or 'unknown'}]"
        for e in rows
    )


def render_states(states: Mapping[str, ControlState], at_ms: int, *, as_json: bool = False) -> str:
    """The complete state of every log (by name) folded up to ``at_ms``."""
    if as_json:
        return json.dumps(
            {
                "at": format_time(at_ms),
                "logs": {
                    name: {"offset": s.offset, "digest": s.digest(), "state": s.to_json()}
                    for name, s in sorted(states.items())
                },
            },
            indent=2,
            sort_keys=True,
        )
    return "\n\n".join(
        f"log of {name}: {render_state(state, at_ms)}" for name, state in sorted(states.items())
    )


def render_state(state: ControlState, at_ms: int, *, as_json: bool = False) -> str:
    """The complete state of one log folded up to ``at_ms``."""
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
    if state.migrated:
        moved = ", ".join(f"{t} (log {i})" for t, i in sorted(state.migrated.items()))
        lines.append(f"moved to their own logs: the flows into {moved}")
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
