"""The audit trail's selection and times, shared by srm-control and the gateway. Pure.

Membership and assignment change all the time; configuration changes are what people
audit, so :func:`changes` leaves the operational events out unless asked for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from srm_common.control.events import (
    AssignmentChanged,
    DriverJoined,
    DriverLeft,
    Envelope,
    TaskConfigsGenerated,
    TaskConfigsPart,
    describe,
)

# Compared by TYPE, the wire name such as "driver.joined", not the class name.
OPERATIONAL = frozenset(
    cls.TYPE
    for cls in (DriverJoined, DriverLeft, AssignmentChanged, TaskConfigsGenerated, TaskConfigsPart)
)


def parse_time(text: str) -> int:
    """Epoch milliseconds from ISO 8601 (no zone = UTC) or a number of milliseconds;
    ``ValueError`` saying what to write instead."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text[:60]!r} is not a time; use ISO 8601 such as 2026-11-20T09:30:00Z"
            " (UTC when no zone is given) or epoch milliseconds"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def format_time(at_ms: int) -> str:
    moment = datetime.fromtimestamp(at_ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at_ms % 1000:03d}Z"


def changes(
    envelopes: Iterable[Envelope],
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    flow: str | None = None,
    everything: bool = False,
) -> list[Envelope]:
    """The envelopes an audit shows, in log order."""
    return [
        e
        for e in envelopes
        if (since_ms is None or e.at_ms >= since_ms)
        and (until_ms is None or e.at_ms <= until_ms)
        and (flow is None or getattr(e.event, "flow", None) == flow)
        and (everything or e.event.TYPE not in OPERATIONAL)
    ]


def entry(envelope: Envelope, log: str | None = None) -> dict[str, object]:
    """One change as JSON: in which log (``log``: a target alias, or ``legacy@<alias>``
    for the single log of an earlier release) and where in it, when, what, who."""
    return {
        **({"log": log} if log is not None else {}),
        "offset": envelope.offset,
        "at": format_time(envelope.at_ms),
        "type": envelope.event.TYPE,
        "by": envelope.by,
        "change": describe(envelope),
    }
