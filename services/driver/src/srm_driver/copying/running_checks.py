"""Checks of running partitions (each flow on its own thread, after the
:class:`~srm_driver.copying.planner.Planner`'s pass): a partition whose source or remote
topic was deleted or recreated is sent back (the reconcile that follows halts it with the
reason), and a running plan gets its source topic's codec when it was not known (the
topic was empty when planned) or changed (the record copy's producers follow it; the batch
copy keeps each batch's own codec and is given none).

The copy loops' clients tell neither, so both are asked of the source and target on a
timer: identities every :data:`IDENTITY_CHECK_S` (per topic; partitions are looked at one
by one only when they started since or their topic changed), unknown codecs every
:data:`CODEC_UNKNOWN_S`, every running topic's codec every :data:`CODEC_REFRESH_S`. A
flow this driver holds no lease for is not checked. :class:`TopicCodecs` is the codecs
found so far, which the planner reads too (a new plan carries its topic's codec)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from srm_common.errors import SrmError

from srm_driver.copying.ledger import Ledger
from srm_driver.copying.ports import FlowAdapters
from srm_driver.copying.restart import identity_changed
from srm_driver.copying.state import PartitionState

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# How often the topics of running partitions are checked for deletion or recreation (by
# topic id); the copy loops' clients do not tell.
IDENTITY_CHECK_S = 2.0
# How often running partitions of topics whose codec is not known yet (empty when
# planned) are looked at again, and how often every running topic's codec is.
CODEC_UNKNOWN_S = 5.0
CODEC_REFRESH_S = 600.0


class TopicCodecs:
    """Per flow, the codec of each source topic found so far."""

    def __init__(self) -> None:
        self._codecs: dict[str, dict[str, str]] = {}

    def of(self, flow: str, topic: str) -> str:
        """The codec found for ``topic`` of ``flow``; "" when not known."""
        return self._codecs.get(flow, {}).get(topic, "")

    def find(
        self, adapters: FlowAdapters, flow: str, keys: list[TopicPartition], *, known: bool
    ) -> dict[str, str]:
        """The codecs of the topics of ``keys``, asked of the source (``known``: only for
        topics whose codec is not known yet); one that cannot be found stays unknown. A
        flow that copies whole batches asks nothing: its copies keep each batch's codec."""
        codecs = self._codecs.setdefault(flow, {})
        if adapters.settings.batches:
            return codecs
        wanted: dict[str, list[int]] = {}
        for topic, partition in keys:
            if not known or topic not in codecs:
                wanted.setdefault(topic, []).append(partition)
        if wanted:
            try:
                codecs.update(adapters.facts.codecs(wanted))
            except SrmError as exc:
                log.warning("%s: cannot find the codecs of %d topics: %s", flow, len(wanted), exc)
        return codecs


class RunningChecks:
    """See the module docstring."""

    def __init__(
        self,
        ledger: Ledger,
        adapters: Callable[[str], FlowAdapters],
        lease_ms: Callable[[str], int],
        codecs: TopicCodecs,
    ) -> None:
        self._ledger = ledger
        self._adapters = adapters
        self._lease_ms = lease_ms
        self._codecs = codecs
        self._identity_due: dict[str, float] = {}
        # Per flow: the topic ids (source, remote; None: missing) the last identity check
        # found, and partitions that started running and were not checked yet (the
        # check that took them failed).
        self._ids_seen: dict[str, dict[str, tuple[str | None, str | None]]] = {}
        self._unchecked: dict[str, list[PartitionState]] = {}
        # Per flow: when unknown codecs, and when every codec, are looked for next.
        self._codec_due: dict[str, tuple[float, float]] = {}

    def check_codecs(self, now: float, flow: str) -> None:
        """Give ``flow``'s running plans the codec of their source topic when it was not
        known (every :data:`CODEC_UNKNOWN_S`) or changed (every :data:`CODEC_REFRESH_S`):
        the next answer carries the plan with its new codec."""
        unknown_due, refresh_due = self._codec_due.get(flow, (0.0, now + CODEC_REFRESH_S))
        refresh = now >= refresh_due
        if (now < unknown_due and not refresh) or self._lease_ms(flow) <= 0:
            return
        self._codec_due[flow] = (
            now + CODEC_UNKNOWN_S,
            now + CODEC_REFRESH_S if refresh else refresh_due,
        )
        try:
            adapters = self._adapters(flow)
        except SrmError as exc:
            log.warning("%s: cannot find the codecs of its topics: %s", flow, exc)
            return
        if adapters.settings.batches:
            return  # whole batches keep their own codec: the plans need none
        with self._ledger.lock:
            parts = self._ledger.parts
            keys = [
                state.key
                for state in (parts.of_flow(flow) if refresh else parts.uncoded(flow))
                if state.status == "running"
                and state.plan is not None
                and (refresh or not state.plan.codec)
            ]
        if not keys:
            return
        codecs = self._codecs.find(adapters, flow, keys, known=False)
        with self._ledger.lock:
            for key in keys:
                state = self._ledger.parts.get(flow, key)
                codec = codecs.get(key[0], "")
                if state is None or state.status != "running" or state.plan is None:
                    continue
                if codec and codec != state.plan.codec:
                    log.info("%s: copies compressed with %s from now on", state.where, codec)
                    state.plan = replace(state.plan, codec=codec)

    def check_identities(self, now: float, flow: str) -> None:
        """Send back ``flow``'s running partitions whose source or remote topic was
        deleted or recreated: the reconcile that follows halts them with the reason.

        Every :data:`IDENTITY_CHECK_S` the ids of the running partitions' topics are
        asked, one describe per cluster (what a 2 s bound on noticing needs); a partition
        is compared with them when it started running since the last check, or when its
        topic's ids differ from those the last check found. A topic's ids change only
        when it is recreated, so every running partition is compared once, and again
        whenever its topic changes: the same halts as comparing every partition every
        time, without walking 10,000 of them under the ledger's lock every 2 s."""
        if now < self._identity_due.get(flow, 0.0) or self._lease_ms(flow) <= 0:
            return
        parts = self._ledger.parts
        with self._ledger.lock:
            topics = parts.running_topics(flow)
            started = parts.take_started(flow)
        if not topics:
            return
        self._identity_due[flow] = now + IDENTITY_CHECK_S
        try:
            found = self._adapters(flow).facts.topic_identities(topics)
        except SrmError as exc:
            log.warning("%s: cannot check the topics of its partitions: %s", flow, exc)
            self._unchecked.setdefault(flow, []).extend(started)
            return
        started += self._unchecked.pop(flow, [])
        seen = self._ids_seen.get(flow, {})
        changed = {topic for topic, ids in found.items() if seen.get(topic) != ids}
        self._ids_seen[flow] = found
        with self._ledger.lock:
            states = started
            if changed:
                states = started + [s for s in parts.of_flow(flow) if s.key[0] in changed]
            for state in states:
                progress = state.progress
                ids = found.get(state.key[0])
                if state.status != "running" or progress is None or ids is None:
                    continue
                if identity_changed(progress, *ids):
                    log.error("%s: a topic was deleted or recreated; stopping it", state.where)
                    state.retry_later(now, "a topic was deleted or recreated")
                    state.backoff = 0.0
