"""Waiting in tests: poll until true or fail naming what and why; wait for a copy to catch up."""

from __future__ import annotations

import time
from collections.abc import Callable

from srm_harness.clients import end_offsets


def wait_caught_up(
    source: str,
    topic: str,
    target: str,
    remote: str,
    timeout: float,
    *,
    stalled_after: float | None = None,
    detail: Callable[[], str] | None = None,
) -> None:
    """Wait until ``remote`` on ``target`` ends where ``topic`` on ``source`` ends now,
    partition by partition (a test then compares their content).

    With ``stalled_after``, ``timeout`` is only an upper bound: the wait fails once the
    target has not grown for ``stalled_after`` seconds, and waits on while it grows (a
    backlog that a loaded machine copies slowly is not a fault; a copy that stopped is)."""
    ends = end_offsets(source, topic)
    if stalled_after is None:
        wait_until(
            lambda: end_offsets(target, remote) == ends,
            timeout,
            "the target catches up",
            detail=detail,
        )
        return
    started = moved = time.monotonic()
    last: dict[int, int] | None = None
    while True:
        now_ends = end_offsets(target, remote)
        if now_ends == ends:
            return
        now = time.monotonic()
        if now_ends != last:
            last, moved = now_ends, now
        if now - moved > stalled_after or now - started > timeout:
            why = (
                f"nothing new for {stalled_after:.0f} s"
                if now - moved > stalled_after
                else f"not within {timeout:.0f} s"
            )
            more = f"\n{detail()}" if detail is not None else ""
            raise TimeoutError(
                f"the target catches up: {why}; {sum(now_ends.values())} of"
                f" {sum(ends.values())} records on {remote} after {now - started:.0f} s{more}"
            )
        time.sleep(0.5)


def wait_until(
    predicate: Callable[[], bool],
    timeout: float,
    what: str,
    step: float = 0.5,
    *,
    detail: Callable[[], str] | None = None,
) -> None:
    """Poll ``predicate`` until true; else TimeoutError naming ``what`` and, taken at the
    moment of failure, ``detail()`` (e.g. the tails of the processes' logs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(step)
    more = f"\n{detail()}" if detail is not None else ""
    raise TimeoutError(f"{what}: not within {timeout:.0f} s{more}")
