"""An operator's explicit resume of a halted partition: where it starts, as one value.

``srm-control partitions --resume T:P --from MODE [--offset N]``, the coordinator's
``POST /v1/commands/resume``, the driver's ``POST .../partitions/{t}/{p}/resume``: every
way in reads a :class:`ResumePoint`, and the command, the state fold and the driver's
restart carry that one value on. The wire shapes around it stay as they were (the HTTP
bodies' ``mode``/``from`` and ``offset``, the ``partition.resume_requested`` event's
fields), so old events and old clients keep working.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from srm_common.domain.progress import PartitionFacts, Progress, Resume


class ResumeMode(StrEnum):
    """Where a resume starts: after what the copy holds, the source's log start or end,
    or one upstream offset."""

    COPY_END = "copy-end"
    SOURCE_START = "source-start"
    SOURCE_END = "source-end"
    OFFSET = "offset"


RESUME_MODES: tuple[str, ...] = tuple(mode.value for mode in ResumeMode)


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """A resume's start: ``mode``, and ``offset`` exactly when the mode is ``offset``.

    Built only valid: :meth:`parse` (and the constructor) raise ``ValueError`` with what
    to give instead."""

    mode: ResumeMode
    offset: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.mode, ResumeMode):
            raise ValueError(
                f"unknown resume point {self.mode!r}; use one of {', '.join(RESUME_MODES)}"
            )
        if (self.mode is ResumeMode.OFFSET) != (self.offset is not None):
            raise ValueError("give an offset exactly when resuming from 'offset'")
        if self.offset is not None and self.offset < 0:
            raise ValueError(f"offset {self.offset} is negative")

    @classmethod
    def parse(cls, mode: str, offset: int | None = None) -> ResumePoint:
        """The point named by ``mode`` (one of :data:`RESUME_MODES`) and ``offset``."""
        try:
            known = ResumeMode(mode)
        except ValueError:
            raise ValueError(
                f"unknown resume point {mode!r}; use one of {', '.join(RESUME_MODES)}"
            ) from None
        return cls(known, offset)

    def describe(self) -> str:
        """``offset 12``, or the mode's name: how status lines and listings show it."""
        return f"offset {self.offset}" if self.mode is ResumeMode.OFFSET else self.mode.value


def resume_from(point: ResumePoint, progress: Progress | None, facts: PartitionFacts) -> Resume:
    """Where an operator's explicit resume of a halted partition starts.

    ``copy-end``: after what the copy holds (the recorded upstream position, kept within
    the source's retained range) and keeping whatever the remote partition holds;
    ``source-start`` / ``source-end``: the source's log start / end; ``offset``: that
    upstream offset (``ValueError`` outside the retained range). The copy lands after the
    remote partition's current end in every case.
    """
    low, high = facts.source_log_start, facts.source_end
    if point.mode is ResumeMode.COPY_END:
        start = min(max(progress.next_upstream if progress else low, low), high)
    elif point.mode is ResumeMode.SOURCE_START:
        start = low
    elif point.mode is ResumeMode.SOURCE_END:
        start = high
    else:
        offset = point.offset
        if offset is None or not low <= offset <= high:
            raise ValueError(
                f"offset {offset} is outside the source partition's retained range {low}..{high}"
            )
        start = offset
    return Resume(start=start, downstream=facts.target_end)
