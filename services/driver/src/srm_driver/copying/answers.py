"""Answers to slot reports: the slot's desired state, whole or as a delta.

Protocol 2 (:mod:`srm_driver.copying.protocol`): the answer to a report whose ``answered``
is the version of the last answer sent to that slot carries ``base`` (that version) and,
per unit, only the plans that changed since (``partitions``), the partitions taken away
(``removed``), and the settings only when they changed. Any other report (the last answer
was lost, or the slot could not apply it; a slot's first report; protocol 1) is answered
with the whole state. So a lost or refused answer costs one whole answer, never a wrong
plan: the slot applies a delta only onto the version it names.

Building a delta visits only the partitions of the slot touched since its last answer
(:meth:`srm_driver.copying.parts.Parts.touched`: their plan or status changed, or they
came, left or moved), so an answer to a slot of 10,000 idle partitions costs what changed;
a whole answer visits them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from srm_driver.copying.clients import UnitSettings
from srm_driver.copying.ledger import Ledger
from srm_driver.copying.ports import LEASE_CAP_MS, FlowAdapters
from srm_driver.copying.protocol import DELTA_PROTOCOL, PartitionPlan, SlotReport

TopicPartition = tuple[str, int]
Where = tuple[str, TopicPartition]
REPORT_MS = 200
SentUnit = tuple[UnitSettings, dict[TopicPartition, PartitionPlan]]


class Answers:
    """Builds the answers of one copy job's slots; call under the ledger's lock, one
    report per slot at a time (:class:`srm_driver.copying.reports.ReportDesk`)."""

    def __init__(
        self,
        ledger: Ledger,
        adapters: Mapping[str, FlowAdapters],
        stopping: Callable[[], bool],
    ) -> None:
        self._ledger = ledger
        self._adapters = adapters
        self._stopping = stopping
        # Per slot, the last answer sent: its version, and per flow the settings and plans
        # it wanted (the base of the next delta, if the slot applied it).
        self._sent: dict[int, tuple[int, dict[str, SentUnit]]] = {}
        # Slots whose full report was taken in (until then, each answer asks for one).
        self._full_seen: set[int] = set()

    def forget(self, slot: int) -> None:
        """``slot`` runs again (a new run, its ``seq`` from 0): no answer it holds is the
        base of a delta, and a full report of it is asked for again."""
        self._sent.pop(slot, None)
        self._full_seen.discard(slot)

    def answer(
        self, report: SlotReport, leases: Mapping[str, int], refused: set[str]
    ) -> dict[str, object]:
        """The slot's desired state, whole or (protocol 2, when the slot holds the last
        answer sent) what changed since that answer; each unit's ``lease_ms`` is its
        flow's lease, the slot's the longest of them (see
        :mod:`srm_driver.copying.protocol`)."""
        slot, version = report.slot, report.seq
        delta = report.protocol >= DELTA_PROTOCOL
        before = self._sent.get(slot) if delta else None
        base = before if before is not None and before[0] == report.answered else None
        parts = self._ledger.parts
        touched = parts.touched(slot)
        units: dict[str, dict[str, object]] = {}
        sent: dict[str, SentUnit] = {}
        for flow, adapters in self._adapters.items():
            if not parts.count_of_slot(slot, flow):
                continue
            entry: dict[str, object] = {
                "epoch": self._ledger.epochs.get((slot, flow), 0),
                "lease_ms": leases.get(flow, 0),
            }
            prior = None if base is None else base[1].get(flow)
            if prior is None:
                plans = self._whole(slot, flow, version)
                entry["settings"] = adapters.settings.to_json()
                entry["partitions"] = [plan.to_json() for plan in plans.values()]
            else:
                settings, plans = prior  # the base's plans, brought up to date in place
                if settings != adapters.settings:
                    entry["settings"] = adapters.settings.to_json()
                changed, removed = self._changes(slot, flow, version, touched, plans)
                entry["partitions"] = changed
                entry["removed"] = removed
            sent[flow] = (adapters.settings, plans)
            units[flow] = entry
        answer: dict[str, object] = {
            "protocol": report.protocol,
            "version": version,
            "lease_ms": max((leases.get(flow, 0) for flow in units), default=LEASE_CAP_MS),
            "report_ms": REPORT_MS,
            "stop": self._stopping(),
            "refused": sorted(refused),
            "units": units,
        }
        if delta:
            self._sent[slot] = (version, sent)
            if base is not None:
                answer["base"] = base[0]
            if report.full:
                # (A refused flow's part is not lost: the slot lists it until it is taken.)
                self._full_seen.add(slot)
            answer["full"] = slot not in self._full_seen
        return answer

    def _whole(self, slot: int, flow: str, version: int) -> dict[TopicPartition, PartitionPlan]:
        """Every plan of ``flow`` the slot is to run now; a partition that is not running
        and not seen stopped is marked left out from ``version`` on."""
        plans: dict[TopicPartition, PartitionPlan] = {}
        for state in self._ledger.parts.of_slot(slot, flow):
            if state.status == "running" and state.plan is not None:
                plans[state.key] = state.plan
            elif not state.stopped and state.omitted_since is None:
                state.omitted_since = version
        return plans

    def _changes(
        self,
        slot: int,
        flow: str,
        version: int,
        touched: set[Where],
        plans: dict[TopicPartition, PartitionPlan],
    ) -> tuple[list[dict[str, object]], list[list[object]]]:
        """What changed of ``flow``'s plans on ``slot`` among the ``touched`` partitions,
        as the entries of a delta (plans new or changed, partitions taken away); brings
        ``plans`` (those of the last answer) up to date."""
        parts = self._ledger.parts
        changed: list[dict[str, object]] = []
        removed: list[list[object]] = []
        for where in touched:
            if where[0] != flow:
                continue
            key = where[1]
            state = parts.get(flow, key)
            here = state is not None and state.slot == slot
            plan = None
            if state is not None and here:
                if state.status == "running" and state.plan is not None:
                    plan = state.plan
                elif not state.stopped and state.omitted_since is None:
                    state.omitted_since = version
            old = plans.get(key)
            if plan is None:
                if old is not None:
                    del plans[key]
                    removed.append([*key])
            elif old is not plan and old != plan:
                plans[key] = plan
                changed.append(plan.to_json())
        return changed, removed
