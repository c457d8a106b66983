"""What `make up` says when one of its clusters dies, freezes or comes back.

Every target cluster holds the log of the flows into it, so a lost cluster stops only
the flows that read from or write into it: the stack keeps running and says so, and the
cluster can be started again while it runs (``srm-local kafka start ALIAS``). Only when
every cluster is gone does the stack stop. Each watch pass gives, per cluster, whether
its broker process runs and whether it answered a listing::

    process   answered   state         said once, when it changes
    gone      -          stopped       cluster dr stopped (...); start it again with ...
    running   no (x2)    unresponsive  cluster dr does not answer (frozen, or cut off?) ...
    running   yes        up            cluster dr is back: its flows catch up
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

UP, STOPPED, UNRESPONSIVE = "up", "stopped", "unresponsive"
# Listings a running cluster may miss before it is called unresponsive (a slow answer
# under load is not a frozen broker).
MISSES = 2


@dataclass
class ClusterWatch:
    """The last state of each cluster by alias (all up at first)."""

    aliases: tuple[str, ...]
    states: dict[str, str] = field(default_factory=dict)
    misses: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.states = dict.fromkeys(self.aliases, UP)
        self.misses = dict.fromkeys(self.aliases, 0)

    def observe(self, running: Iterable[str], answered: Mapping[str, object]) -> list[str]:
        """The lines to print for this pass: ``running`` are the aliases whose broker
        process runs, ``answered`` the aliases whose listing came back."""
        alive = set(running)
        lines = []
        for alias in self.aliases:
            before = self.states[alias]
            if alias not in alive:
                now = STOPPED
                self.misses[alias] = 0
            elif alias in answered:
                now = UP
                self.misses[alias] = 0
            else:
                self.misses[alias] += 1
                now = UNRESPONSIVE if self.misses[alias] >= MISSES else before
            if now != before:
                self.states[alias] = now
                lines.append(self._said(alias, now, before))
        return lines

    def all_stopped(self) -> bool:
        return all(state == STOPPED for state in self.states.values())

    def _said(self, alias: str, now: str, before: str) -> str:
        others = [a for a in self.aliases if a != alias and self.states[a] == UP]
        going_on = f"the rest keep running ({', '.join(others) or 'nothing else is up'})"
        if now == STOPPED:
            return (
                f"cluster {alias} stopped (its broker exited); {going_on}: only the flows"
                f" from or into {alias} wait for it. Start it again with"
                f" `.venv/bin/srm-local kafka start {alias}`"
            )
        if now == UNRESPONSIVE:
            return (
                f"cluster {alias} does not answer (frozen, or cut off?); {going_on}: only"
                f" the flows from or into {alias} wait for it"
            )
        return f"cluster {alias} is back (was {before}): its flows catch up"
