"""Each flow's adapters (:class:`~srm_driver.copying.ports.FlowAdapters`: its progress
store, facts, offset syncs and copy-client settings), built on first use by the factory
the composition root hands the copy service, then kept; and the sizing of each flow's
copy clients to its records and its source's round trip.

A build that fails (a cluster that does not answer, an internal topic that cannot be
created) is not tried again for :data:`ADAPTER_RETRY_S`: meanwhile every caller gets the
same error at once, so a flow's thread that asks many times a second does not hammer a
cluster that is down."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Mapping

from srm_common.config.model import FlowConfig
from srm_common.errors import SrmError

from srm_driver.copying.clients import UnitSettings, sized_for_records, sized_for_round_trip
from srm_driver.copying.ports import FlowAdapters

log = logging.getLogger(__name__)

ADAPTER_RETRY_S = 5.0


class FlowAdapterCache:
    """See the module docstring. :attr:`built` (by flow) is written under ``lock``, the
    ledger's (the report desk reads it there), and read without it here."""

    def __init__(
        self,
        make: Callable[[FlowConfig], FlowAdapters],
        flows: Mapping[str, FlowConfig],
        lock: threading.RLock,
        clock: Callable[[], float],
    ) -> None:
        self._make = make
        self._flows = flows
        self._lock = lock
        # Per flow, held while its adapters are built (not the ledger's lock: a build
        # takes seconds, and one flow's cluster must not hold up another flow).
        self._building: dict[str, threading.Lock] = {}
        self._clock = clock
        self.built: dict[str, FlowAdapters] = {}
        self._errors: dict[str, tuple[float, str]] = {}
        # Per flow: the record size and round trip its settings carry, and the settings
        # they were sized from (the configuration's).
        self._sized: dict[str, tuple[int, int]] = {}
        self._base_settings: dict[str, UnitSettings] = {}

    def get(self, flow: str) -> FlowAdapters:
        """``flow``'s adapters, built now if they were not; :class:`SrmError` if they cannot
        be (the last failure's, until its retry is due)."""
        # Read without the ledger's lock (entries are only ever added, and one dict read
        # is atomic): a report of 15,000 partitions holds that lock about a second, and a
        # flow's topics thread asks at every pass.
        adapters = self.built.get(flow)
        if adapters is not None:
            return adapters
        with self._lock:
            building = self._building.setdefault(flow, threading.Lock())
        # A flow's topics and planning threads both ask: one builds, the other waits for
        # it (a second build would leave the first's clients open).
        with building:
            with self._lock:
                adapters = self.built.get(flow)
            if adapters is not None:
                return adapters
            failed = self._errors.get(flow)
            if failed is not None and self._clock() < failed[0]:
                raise SrmError(failed[1])
            try:
                adapters = self._make(self._flows[flow])
            except SrmError as exc:
                self._errors[flow] = (self._clock() + ADAPTER_RETRY_S, str(exc))
                raise
            with self._lock:
                self.built[flow] = adapters
            return adapters

    def size(self, flow: str, largest_record: int, round_trip_ms: float | None) -> None:
        """Size ``flow``'s copy clients for record batches of ``largest_record`` bytes and
        for the round trip to its source (rounded up to a power of two, so jitter changes
        nothing). Costs nothing while neither changed; nothing before the flow's adapters
        are built."""
        rtt = 1 << max(0, math.ceil(round_trip_ms) - 1).bit_length() if round_trip_ms else 0
        if self._sized.get(flow) == (largest_record, rtt):
            return  # (the flow's topics thread alone sizes: no lock for the usual answer)
        with self._lock:
            adapters = self.built.get(flow)
            if adapters is None:
                return
            self._sized[flow] = (largest_record, rtt)
            base = self._base_settings.setdefault(flow, adapters.settings)
            sized = sized_for_round_trip(sized_for_records(base, largest_record), rtt)
            if sized == adapters.settings:
                return
            adapters.settings = sized
        log.info(
            "%s: copy clients sized for records of up to %d bytes and a %d ms round trip:"
            " max.request.size %s, max.partition.fetch.bytes %s, fetch.max.bytes %s",
            flow,
            largest_record,
            rtt,
            sized.producer.get("max.request.size"),
            sized.consumer.get("max.partition.fetch.bytes"),
            sized.consumer.get("fetch.max.bytes"),
        )
