"""What the folds send (:class:`Out`), by role: aggregated windows, contributions to the
subject above (:func:`contribution_of`) and dead letters with their reason."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from srm_common.metrics.aggregate import REASON_HEADER, Aggregate, Figures

AGGREGATED = "aggregated"
CONTRIBUTIONS = "contributions"
DEAD = "dead"


class Out(NamedTuple):
    """A record to send: ``role`` is :data:`AGGREGATED`, :data:`CONTRIBUTIONS` or
    :data:`DEAD`."""

    role: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


def dead_letter(key: bytes | None, value: bytes | None, reason: str) -> Out:
    return Out(DEAD, key, value, ((REASON_HEADER, reason.encode()),))


def _above(level: str, subject: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The level and subject a window of ``level`` contributes to (None: the top)."""
    if level == "partition":
        return "topic", {"flow": subject["flow"], "topic": subject["topic"]}
    if level in ("group", "driver", "topic"):
        return "flow", {"flow": subject["flow"]}
    if level == "flow":
        return "cluster", {"cluster": str(subject["flow"]).split("->", 1)[1]}
    return None


def contribution_of(
    level: str,
    size: int,
    start: int,
    subject: dict[str, Any],
    origin: str,
    figures: Figures,
    *,
    closed: bool,
    final: bool,
) -> Out | None:
    above = _above(level, subject)
    if above is None:
        return None
    upper = Aggregate(above[0], size, start, above[1], False, Figures())
    value = {
        "level": upper.level,
        "window_ms": size,
        "start_ms": start,
        "subject": upper.subject,
        "from": origin,
        "closed": closed,
        "final": final,
        "figures": figures.to_json(),
    }
    return Out(CONTRIBUTIONS, upper.key(), compact_json(value))


def compact_json(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
