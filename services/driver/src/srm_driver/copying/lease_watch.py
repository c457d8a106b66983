"""Since when this driver has held each flow's lease without a gap, as far as its looks
can tell (pure; the planner looks once per pass over a flow).

A look sees how long the lease still runs; the lease was held from one look to the next
if the next came before the end the first one saw. A look that finds no lease, or comes
after that end (the process was paused, a pass took that long), starts the count again::

    looks      t=0 (5 s left)   t=3 (5 s left)   t=10 (5 s left)
    held since 0                0                10      (3 + 5 < 10: maybe a gap)

What it is for: a partition restarted where it was acknowledged
(:func:`~srm_driver.copying.positions.exact_restart`) trusts that no other driver
wrote it since its unit broke, which holds only while this driver kept the flow's lease
(the coordinator waits a lease out before it hands the flow's partitions to another).
"""

from __future__ import annotations


class LeaseWatch:
    """See the module docstring."""

    def __init__(self) -> None:
        self._since: dict[str, float] = {}
        self._until: dict[str, float] = {}

    def look(self, flow: str, now: float, lease_ms: int) -> float | None:
        """Record a look at ``flow``'s lease (``lease_ms`` left at ``now``); since when it
        has been held without a gap, or None when there is no lease now."""
        if lease_ms <= 0:
            self._since.pop(flow, None)
            self._until.pop(flow, None)
            return None
        until = self._until.get(flow)
        if until is None or now > until:
            self._since[flow] = now
        self._until[flow] = now + lease_ms / 1000
        return self._since[flow]
