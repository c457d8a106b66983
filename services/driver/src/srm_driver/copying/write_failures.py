"""One log line for a flow whose progress writes keep failing, not one per report.

Every report of every slot that carries a flow's syncs or progress writes them; when the
write fails, the flow's part is refused and comes again in the next report (every 200 ms
by default), and at a stop an ending slot sends its refused last report again for up to
``copier.control.FINAL_REPORT_S``: one error line per refusal was 53 lines in 3.5 s for
two flows. So the first failure of a flow is logged at once, the same error again within
:data:`REPEAT_S` of that line is only counted, and the next line (another error, or the
same one :data:`REPEAT_S` later) says how many it left out; the first write of the flow
that succeeds after failures says so, with the count. The flow's status keeps the last
error in any case (``Ledger.unit_errors``).
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

# The same failure of a flow is logged at most once in this many seconds.
REPEAT_S = 10.0


class WriteFailures:
    """See the module docstring; called from the report threads of every slot."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # flow -> (the error last logged, when, failures left out since)
        self._failing: dict[str, tuple[str, float, int]] = {}

    def failed(self, slot: int, flow: str, error: object, now: float) -> None:
        text = str(error)
        with self._lock:
            last = self._failing.get(flow)
            if last is not None and last[0] == text and now - last[1] < REPEAT_S:
                self._failing[flow] = (text, last[1], last[2] + 1)
                return
            left_out = last[2] if last is not None else 0
            self._failing[flow] = (text, now, 0)
        more = f" (and {left_out} more failed writes since the last line)" if left_out else ""
        log.error("copy slot %d: cannot record progress of %s: %s%s", slot, flow, text, more)

    def recorded(self, flow: str) -> None:
        if flow not in self._failing:
            return  # the common case, without the lock
        with self._lock:
            last = self._failing.pop(flow, None)
        if last is not None:
            more = f" ({last[2]} more failed writes not logged)" if last[2] else ""
            log.info("progress of %s recorded again%s", flow, more)
