"""What ``srm-control partitions --list`` prints: a flow's halted partitions, resumes and
records lost to retention, readable at any count. Pure: the folded state in, lines out.

Each part starts with a count and a summary (halts by kind), then lists at most
``limit`` entries, the ones to look at first: halts the longest halted first, resumes
the newest first, losses the largest first; a last line says how many were left out and
how to see them (``--all``, ``--limit N``, ``--topic T``).
"""

from __future__ import annotations

from collections import Counter

from srm_common.control.audit import format_time
from srm_common.control.state import ControlState

DEFAULT_LIMIT = 20


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _more(left: int, what: str) -> list[str]:
    if left <= 0:
        return []
    return [f"  ... and {left:,} more {what} (--all, --limit N, or --topic TOPIC for one topic)"]


def partition_lines(
    state: ControlState, flow: str, *, limit: int | None = DEFAULT_LIMIT, topic: str | None = None
) -> list[str]:
    """The listing of ``flow`` (``limit`` None: every entry; ``topic``: that topic's)."""
    prefix = f"{flow}|" if topic is None else f"{flow}|{topic}|"
    halts = [h for k, h in state.halts.items() if k.startswith(prefix)]
    resumes = [r for k, r in state.resumes.items() if k.startswith(prefix)]
    losses = [(k, state.lost(k)) for k in state.losses if k.startswith(prefix)]
    shown = len(halts) if limit is None else limit
    where = f"{flow}" if topic is None else f"{flow} topic {topic}"
    lines = [f"{where}: {_plural(len(halts), 'halted partition')}"]
    if len(halts) > 1:
        kinds = Counter(h.kind for h in halts)
        lines[0] += " (" + ", ".join(f"{k} {n:,}" for k, n in kinds.most_common()) + ")"
    if len(halts) > shown:
        lines[0] += f"; the {shown:,} halted longest:"
    for halt in sorted(halts, key=lambda h: (h.at_ms, h.topic, h.partition))[:shown]:
        lines.append(
            f"  {halt.topic}:{halt.partition}  {halt.kind} since {format_time(halt.at_ms)} on"
            f" driver {halt.driver}"
        )
        lines.append(f"      {halt.reason}")
    lines += _more(len(halts) - shown, "halted")
    shown = len(resumes) if limit is None else limit
    if len(resumes) > shown:
        lines.append(f"{_plural(len(resumes), 'resume')} asked; the {shown:,} newest:")
    for resume in sorted(resumes, key=lambda r: -r.at_ms)[:shown]:
        lines.append(
            f"  {resume.topic}:{resume.partition}  resumed from {resume.point.describe()},"
            f" asked by {resume.by} at {format_time(resume.at_ms)}"
        )
    lines += _more(len(resumes) - shown, "resumes")
    if losses:
        shown = len(losses) if limit is None else limit
        total = sum(lost for _k, lost in losses)
        order = "; the largest first" if len(losses) > 1 else ""
        lines.append(
            f"Lost to retention before they were copied ({_plural(total, 'offset')} in"
            f" {_plural(len(losses), 'partition')}{order}):"
        )
        for key, lost in sorted(losses, key=lambda kl: (-kl[1], kl[0]))[:shown]:
            _flow_name, name, partition = key.rsplit("|", 2)
            lines.append(f"  {name}:{partition}  {lost} offsets")
        lines += _more(len(losses) - shown, "partitions with losses")
    return lines
