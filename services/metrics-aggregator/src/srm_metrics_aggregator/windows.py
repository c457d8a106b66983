"""Tumbling windows and one subject's fold in one window. Pure.

A sample belongs, for each window size, to the window ``[start, start + size)`` with
``start = at_ms // size * size`` (``at_ms`` is when the sample's interval ends, on the
driver's clock)::

    size 60000:  at_ms 1700000059999 -> window 1700000000000 (to ...060000)
                 at_ms 1700000060000 -> window 1700000060000 (to ...120000)

A :class:`Cell` is one subject (a partition, a group, a flow on one driver) in one window:
its :class:`~srm_common.metrics.aggregate.Figures`, the ids of the samples folded (a
sample delivered twice is folded once) and the stamp ``(at_ms, id)`` of the latest one,
whose *last* figures (lag, status, tasks, heartbeat age, untranslated partitions) the
cell shows, whatever order samples arrive in.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from srm_common.errors import ConfigError
from srm_common.metrics.aggregate import Figures
from srm_common.metrics.raw import FlowSample, GroupSample, PartitionSample, Sample

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration(text: str, *, key: str) -> int:
    """``"1m"`` -> 60000; ``500ms``, ``2s``, ``1h``, ``1d``; bare digits are milliseconds."""
    match = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|h|d)?\s*", text)
    if match is None or int(match.group(1)) <= 0:
        raise ConfigError(f"{text!r} is not a duration; write e.g. 1m, 1h, 30s or 500ms", key=key)
    return int(match.group(1)) * _UNITS[match.group(2) or "ms"]


def parse_windows(text: str, *, key: str = "srm.metrics.windows") -> tuple[int, ...]:
    """``"1m,1h"`` -> (60000, 3600000): distinct sizes, smallest first."""
    sizes = sorted({parse_duration(part, key=key) for part in text.split(",") if part.strip()})
    if not sizes:
        raise ConfigError("no window size; write e.g. 1m,1h", key=key)
    return tuple(sizes)


def window_start(at_ms: int, size_ms: int) -> int:
    return at_ms // size_ms * size_ms


LAST_FIGURES = (
    "partitions",
    "lag_records",
    "lag_ms",
    "halted_partitions",
    "halt_reason",
    "drivers",
    "tasks",
    "heartbeat_age_ms",
    "groups",
    "untranslated_partitions",
)
"""Figures a subject's latest sample sets, not added up within a cell."""


@dataclass(frozen=True)
class Cell:
    """One subject in one window: its figures, the ids folded and the latest stamp."""

    figures: Figures = field(default_factory=Figures)
    ids: frozenset[str] = frozenset()
    last_at_ms: int = -1
    last_id: str = ""
    closed: bool = False

    def fold(self, sample: Sample) -> Cell | None:
        """This cell with ``sample`` added; None when its id was folded already."""
        if sample.id in self.ids:
            return None
        latest = (sample.at_ms, sample.id) >= (self.last_at_ms, self.last_id)
        lasts = _lasts(sample) if latest else {}
        kept = {name: getattr(self.figures, name) for name in LAST_FIGURES if name not in lasts}
        figures = replace(self.figures + _sums(sample), **kept, **lasts)
        return replace(
            self,
            figures=figures,
            ids=self.ids | {sample.id},
            last_at_ms=sample.at_ms if latest else self.last_at_ms,
            last_id=sample.id if latest else self.last_id,
        )

    def to_bytes(self) -> bytes:
        data = {
            "figures": self.figures.to_json(),
            "ids": list(self.ids),
            "last": [self.last_at_ms, self.last_id],
            "closed": self.closed,
        }
        return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, value: bytes) -> Cell:
        data: dict[str, Any] = json.loads(value)
        return cls(
            figures=Figures.from_json(data["figures"]),
            ids=frozenset(data["ids"]),
            last_at_ms=int(data["last"][0]),
            last_id=str(data["last"][1]),
            closed=bool(data["closed"]),
        )


def _sums(sample: Sample) -> Figures:
    """What ``sample`` adds to its cell (the sums, minima and maxima)."""
    if isinstance(sample, PartitionSample):
        return Figures(
            samples=1,
            records=sample.records,
            bytes=sample.bytes,
            lost=sample.lost,
            latency=sample.latency,
            latency_sum_ms=sample.latency_sum_ms,
            latency_min_ms=sample.latency_min_ms,
            latency_max_ms=sample.latency_max_ms,
        )
    if isinstance(sample, GroupSample):
        measured = sample.checkpoint_latency_ms is not None
        return Figures(
            samples=1,
            checkpoints=sample.checkpoints,
            checkpoint_latency_count=1 if measured else 0,
            checkpoint_latency_sum_ms=sample.checkpoint_latency_ms or 0,
            checkpoint_latency_min_ms=sample.checkpoint_latency_ms,
            checkpoint_latency_max_ms=sample.checkpoint_latency_ms,
        )
    return Figures(samples=1)


def _lasts(sample: Sample) -> dict[str, Any]:
    """The figures the latest sample of a subject sets (its state, not a sum)."""
    if isinstance(sample, PartitionSample):
        halted = sample.status == "halted"
        return {
            "partitions": 1,
            "lag_records": sample.lag_records,
            "lag_ms": sample.lag_ms,
            "halted_partitions": 1 if halted else 0,
            "halt_reason": sample.halt_reason if halted else None,
        }
    if isinstance(sample, FlowSample):
        return {
            "drivers": 1,
            "tasks": dict(sorted(sample.tasks.items())),
            "heartbeat_age_ms": sample.heartbeat_age_ms,
        }
    if isinstance(sample, GroupSample):
        return {"groups": 1, "untranslated_partitions": sample.untranslated_partitions}
    return {}
