"""Every log as one history: the per-target logs (and the single log of an earlier
release) merged in time, and one state for views over all of them. Pure.

Each target cluster keeps its own log (:mod:`srm_common.config.control`), written by its
own leader. People still want one answer: ``srm-control audit``, ``GET /v1/audit`` and
the gateway's views read every log. :func:`merged` interleaves them by the time each
event was appended (``at_ms``, the writing leader's wall clock) and keeps each log's own
order whatever its clock did::

    backup   #0 10:00:00.1   #2 10:00:05.0   #4 10:00:04.9  (its leader's clock stepped back)
    dr       #0 10:00:01.0   #2 10:00:04.95
    merged   backup#0, dr#0, dr#2, backup#2, backup#4         (a log is never reordered)

So two leaders whose clocks differ by s seconds may show entries of different logs in
the wrong order within s. Nothing depends on that order: each log is folded alone, in its
own order (:func:`states_at`), and a log's events concern only the flows into its target.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from srm_common.control.schema import Envelope
from srm_common.control.state import ControlState, replay


@dataclass(frozen=True, slots=True)
class Entry:
    """An envelope and the log it is in (a target alias, or ``legacy@<alias>``)."""

    log: str
    envelope: Envelope


def merged(histories: Mapping[str, Sequence[Envelope]]) -> list[Entry]:
    """Every envelope of every log, by time; each log's own order kept (the module
    docstring); logs named alike at the same millisecond in name order."""
    streams = [
        [Entry(name, envelope) for envelope in envelopes]
        for name, envelopes in sorted(histories.items())
    ]
    return list(heapq.merge(*streams, key=lambda entry: entry.envelope.at_ms))


def states_at(
    histories: Mapping[str, Sequence[Envelope]], until_ms: int | None = None
) -> dict[str, ControlState]:
    """Each log folded alone, up to ``until_ms`` (all of it when None)."""
    return {name: replay(envelopes, until_ms=until_ms) for name, envelopes in histories.items()}


def combined(states: Iterable[ControlState]) -> ControlState:
    """One state for views over the logs of several targets: their flows, lists, task
    configs, assignments, members, halts, resumes and losses side by side (each flow is
    in exactly one target's log, so nothing collides but members, which are the same
    driver in each log it serves). Per-log facts (leader, log id, offset, generation) are
    left empty: ask a log for those."""
    result = ControlState()
    for state in states:
        result = replace(
            result,
            at_ms=max(result.at_ms, state.at_ms),
            config_path=result.config_path or state.config_path,
            baseline={**result.baseline, **state.baseline},
            flows={**result.flows, **state.flows},
            tasks={**result.tasks, **state.tasks},
            drivers={**state.drivers, **result.drivers},
            assignment={**result.assignment, **state.assignment},
            halts={**result.halts, **state.halts},
            resumes={**result.resumes, **state.resumes},
            losses={**result.losses, **state.losses},
            commands={**result.commands, **state.commands},
        )
    return result
