"""Partitions that wait for their offsets, asked together and only that.

A remote partition just created answers NOT_LEADER until the target broker has loaded it,
and a broker creating thousands loads a few dozen a second for minutes (measured: 18-50 a
second at a cold start of 5,000). Reconciling every waiting partition again at each pass
(progress, topic ids and offsets on both sides, then a metadata listing) was most of the
driver's CPU at a cold start. Instead, every :data:`AWAIT_PROBE_S` one ListOffsets on the
target asks for all the partitions of a flow waiting so whether their remote partition can
be read now, whenever each began to wait; only those that can are reconciled. After
:data:`AWAIT_FULL_S` of waiting, a partition is reconciled whole again anyway: what it
waits for may be something else by then (its remote topic deleted meanwhile, a source
partition that cannot be read).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from srm_common.errors import SrmError

from srm_driver.copying.ledger import Ledger
from srm_driver.copying.ports import FlowAdapters
from srm_driver.copying.state import PartitionState

log = logging.getLogger(__name__)

AWAIT_PROBE_S = 2.0
AWAIT_FULL_S = 30.0


class Awaiting:
    """The flows' rounds of asking; see the module docstring."""

    def __init__(self, ledger: Ledger, adapters: Callable[[str], FlowAdapters]) -> None:
        self._ledger = ledger
        self._adapters = adapters
        self._round_at: dict[str, float] = {}

    def next_round(self, flow: str, now: float) -> float:
        """When the partitions of ``flow`` waiting for their offsets are asked next: one
        round for all of them, whenever each began to wait."""
        at = self._round_at.get(flow, 0.0)
        if at <= now:
            at = self._round_at[flow] = now + AWAIT_PROBE_S
        return at

    def ask(self, flow: str, due: list[PartitionState], now: float) -> list[PartitionState]:
        """Of ``due``, those to reconcile now: the partitions waiting for their offsets
        are first asked, all in one request, whether theirs can be read; those that still
        cannot wait for the flow's next round, with why."""
        waiting = {
            s.key: s for s in due if s.awaiting is not None and now - s.awaiting < AWAIT_FULL_S
        }
        if not waiting:
            return due
        try:
            unready = self._adapters(flow).facts.remote_unready(
                {key: s.remote for key, s in waiting.items()}
            )
        except SrmError as exc:
            unready = dict.fromkeys(waiting, str(exc))
        unready = {key: why for key, why in unready.items() if key in waiting}
        if not unready:
            return due
        retry_at = self.next_round(flow, now)
        with self._ledger.lock:
            for key, why in unready.items():
                state = waiting[key]
                if state.status == "pending":  # not let go meanwhile
                    state.error = why
                    state.retry_at = retry_at
        log_waiting(flow, unready)
        return [s for s in due if s.key not in unready]


def log_waiting(flow: str, reasons: Mapping[tuple[str, int], str]) -> None:
    """One line for the partitions of ``flow`` that wait for their offsets: how many,
    and the first one's reason (``reasons`` is not empty)."""
    log.warning(
        "%s: %d partitions wait for their offsets (retrying): %s",
        flow,
        len(reasons),
        next(iter(reasons.values())),
    )
