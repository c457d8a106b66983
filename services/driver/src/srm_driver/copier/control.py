"""One copy slot: it asks the driver what to copy and runs it.

Every ``report_ms`` (and at once when a unit has news: a failure, a stopped partition, a
reservation reached) the slot POSTs a report to the driver's control endpoint: per flow
unit, per partition plan, what was acknowledged, the offset syncs since the last
answered report, counters and errors. The answer is the whole desired state of the slot
(level triggered: a lost answer is repaired by the next one) and, per flow unit, its
lease: how many milliseconds the driver may still let records of that flow be written,
counted here from when the request was sent. Each unit has its own
:class:`~srm_driver.copier.lease.Lease`: a flow whose lease runs out stops while the
others go on. A unit the answer leaves out is stopped and given nothing; a driver that
does not answer lets every lease run out by itself; one slow to answer is asked for the
leases alone meanwhile (:mod:`srm_driver.copier.keep`), so a late answer does not stop
the units. The answer also lists the flows
whose part of the report the driver did not take in (``refused``): their syncs, stops
and exits are kept and reported again. An answer 410 means the driver no longer knows
this job: the slot revokes every lease, stops everything and ends; so does a run of the
slot that a newer run (Spark ran the slot's task again) took over. The protocol is
:mod:`srm_driver.copying.protocol`.

Copy protocol 2: reports and answers carry what changed. A report lists only the
partitions whose entry differs from the last one the driver took in (or that carry
syncs); it lists them all when it is the slot's first, every :data:`FULL_EVERY_S` and
when the driver asks (``full`` in an answer). An answer with a ``base`` is a delta onto
the answer of that version, which :class:`~srm_driver.copier.plan.Desired` applies only
if it holds that version. An answer of a driver that does not say protocol 2 stops the
slot: such a driver would take a partition left out of a report for one not running.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from srm_driver.copier.driver_link import PROTOCOL, Answer, DriverLine, read_answer
from srm_driver.copier.keep import ANSWER_TIMEOUT_S, LeaseKeeper
from srm_driver.copier.lease import Lease
from srm_driver.copier.plan import Desired, UnitPlan
from srm_driver.copier.unit import FlowUnit, PlanKey

log = logging.getLogger(__name__)

_UNIT_JOIN_S = 70.0
# A report of every partition at least this often, whatever changed: a safety net.
FULL_EVERY_S = 30.0
# How long an ending slot asks the driver again to take its last report while the driver
# refuses it (the flow's progress write failed, or takes longer than an answer waits):
# until then the partitions' final progress is not recorded. Counted from when its first
# exiting report leaves; no try starts past it, so the slot ends at most this plus one
# try (the driver answers a refused part within its write budget,
# copying.reports.WRITE_BUDGET_S, 1 s) after that. Sized to what the driver's own stop
# leaves it (srm_common.shutdown.DRIVER_STOP_SECONDS, 20 s): its flow workers first (up
# to 5 s), then this, then the copy job's end, the heartbeat and checkpoint threads,
# the last metrics samples, the goodbye beat and Spark's stop, which need the rest.
FINAL_REPORT_S = 5.0


@dataclass
class _Snapshot:
    body: dict[str, Any]
    sync_counts: dict[str, dict[PlanKey, int]] = field(default_factory=dict)
    stopped: dict[str, set[PlanKey]] = field(default_factory=dict)
    exited: list[str] = field(default_factory=list)
    full: bool = True
    sent: dict[str, dict[PlanKey, dict[str, Any]]] = field(default_factory=dict)


class SlotRunner:
    """See the module docstring; :meth:`run` returns when the slot has ended and none of
    its units can write any more."""

    def __init__(
        self,
        control_url: str,
        job_id: str,
        slot: int,
        secret: str,
        run: dict[str, object] | None = None,
        server_certificate: str | None = None,
    ) -> None:
        # Which run of the slot this is (Spark runs a slot's task again after it lost the
        # executor): in every report, so that the driver fences the run a newer one took
        # over (srm_driver.copying.runs).
        self._run = run or {"id": uuid.uuid4().hex, "attempt": 0, "executor": ""}
        # server_certificate: the driver's listener certificate (PEM), handed over with
        # the job: the one server these reports go to.
        self._line = DriverLine(control_url, server_certificate, ANSWER_TIMEOUT_S)
        self._path = f"{self._line.base_path}/internal/v1/copy/{job_id}/slots/{slot}"
        self._authorization = f"Bearer {secret}"
        self._job_id = job_id
        self.slot = slot
        self._units: dict[str, FlowUnit] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._signal = threading.Event()
        self._seq = 0
        self._answered = -1
        self._desired = Desired()
        self._full_wanted = True
        self._last_full = 0.0
        self._keeper = LeaseKeeper(
            slot, f"{self._path}/lease", self._authorization, self._run, self._line.open, PROTOCOL
        )

    def run(self) -> None:
        try:
            self._control()
        finally:
            # However the control loop ended, no unit of this slot may write on: stop them
            # and wait for them (their producers are gone), so "this slot ended" means it.
            self._stop_units()
            for thread in self._threads.values():
                thread.join(_UNIT_JOIN_S)
            self._line.disconnect()

    def nudge(self) -> None:
        self._signal.set()

    def _control(self) -> None:
        interval = 0.2
        stopping = False
        final_from: float | None = None  # when the first report saying "exiting" left
        unanswered = 0  # exiting reports in a row that got no answer at all
        while True:
            exiting = stopping and all(unit.exited for unit in self._units.values())
            if exiting and final_from is None:
                final_from = time.monotonic()  # before it is sent: its answer may be slow
            snapshot = self._snapshot(exiting)
            sent_at = time.monotonic_ns()
            answer = self._exchange(snapshot)
            if answer is not None and answer.incompatible is not None:
                log.error("srm copy slot %d: %s", self.slot, answer.incompatible)
                answer.gone = True
            if answer is not None and answer.gone:
                for unit in self._units.values():
                    unit.lease.revoke()
                if not stopping:
                    stopping = True
                    self._stop_units()
            elif answer is not None:
                self._grant(answer, sent_at)
                self._confirm(snapshot, answer.refused)
                if snapshot.full:
                    self._last_full = sent_at / 1e9
                self._full_wanted = answer.full
                interval = max(0.02, answer.report_ms / 1000)
                if answer.stop and not stopping:
                    stopping = True
                    self._stop_units()
                if not stopping and self._apply(answer, sent_at):
                    self._answered = answer.version
            taken = answer is not None and not answer.refused
            if exiting:
                # The last part (the final acknowledgements and syncs, the stopped plans)
                # is what the driver records as the partitions' final progress: asked
                # again while the driver refuses it (its write failed or still runs), not
                # abandoned after a few tries; a driver that does not answer at all, or
                # no longer knows the job, is not waited for.
                assert final_from is not None
                now = time.monotonic()
                unanswered = unanswered + 1 if answer is None else 0
                gone = answer is not None and answer.gone
                late = now + interval - final_from > FINAL_REPORT_S  # a next try starts past it
                if taken or gone or unanswered >= 3 or late:
                    if not taken:
                        why = (
                            "the job is over" if gone
                            else "no answer" if answer is None
                            else f"refused for {now - final_from:.1f} s"
                        )  # fmt: skip
                        log.warning(
                            "srm copy slot %d: ending with its last report not recorded (%s):"
                            " the next start verifies from the last record",
                            self.slot,
                            why,
                        )
                    return
                self._signal.wait(interval)
                self._signal.clear()
                continue
            self._signal.wait(0.05 if stopping else interval)
            self._signal.clear()

    def _snapshot(self, exiting: bool) -> _Snapshot:
        full = self._full_wanted or time.monotonic() - self._last_full > FULL_EVERY_S
        snapshot = _Snapshot(body={}, full=full)
        reports = []
        longest = 0
        for flow, unit in self._units.items():
            counts: dict[PlanKey, int] = {}
            stopped: set[PlanKey] = set()
            sent: dict[PlanKey, dict[str, Any]] = {}
            longest = max(longest, unit.lease.remaining_ms())
            entry, exited = unit.report(counts, stopped, sent, full=full)
            snapshot.sent[flow] = sent
            reports.append(entry)
            snapshot.sync_counts[flow] = counts
            snapshot.stopped[flow] = stopped
            if exited:
                snapshot.exited.append(flow)
        snapshot.body = {
            "protocol": PROTOCOL,
            "full": full,
            "job": self._job_id,
            "slot": self.slot,
            "seq": self._seq,
            "answered": self._answered,
            "lease_ms": longest,
            "exiting": exiting,
            "units": reports,
            "run": self._run,
        }
        self._seq += 1
        return snapshot

    def _exchange(self, snapshot: _Snapshot) -> Answer | None:
        """POST the report; the answer, or None when there is none to act on (the driver
        is unreachable or refused it: the leases run out by themselves)."""
        data = json.dumps(snapshot.body, separators=(",", ":")).encode()
        try:
            connection = self._line.connect()
            connection.request(
                "POST",
                self._path,
                body=data,
                headers={"Content-Type": "application/json", "Authorization": self._authorization},
            )
            if not self._keeper.await_answer(connection, time.monotonic(), self._units):
                self._line.disconnect()
                return Answer(gone=True)  # a keep was answered 410: this run is over
            response = connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException):
            self._line.disconnect()
            return None
        return read_answer(self.slot, response.status, payload)

    def _grant(self, answer: Answer, sent_at: int) -> None:
        """Give each unit the lease its entry in the answer carries (the slot-level one if
        the entry has none), counted from ``sent_at``; a unit the answer leaves out gets
        nothing (it is being stopped; its lease runs out by itself)."""
        for flow, unit in self._units.items():
            wanted = answer.units.get(flow)
            if isinstance(wanted, dict):
                unit.lease.grant(sent_at, _lease_of(wanted, answer.lease_ms))

    def _confirm(self, snapshot: _Snapshot, refused: set[str]) -> None:
        """The driver took the report in, but for the ``refused`` flows: those keep it all."""
        for flow, counts in snapshot.sync_counts.items():
            unit = self._units.get(flow)
            if unit is not None and flow not in refused:
                unit.confirm(counts, snapshot.stopped[flow], snapshot.sent.get(flow))
        for flow in snapshot.exited:
            if flow in refused:
                continue  # reported again, so that the driver sees it ended
            self._units.pop(flow, None)
            thread = self._threads.pop(flow, None)
            if thread is not None:
                thread.join(1)

    def _apply(self, answer: Answer, sent_at: int) -> bool:
        """Bring the units to the answer's desired state; False (nothing applied) when it
        is a delta onto a version this slot does not hold, or malformed: the driver then
        answers the next report, which names the version held, with the whole state."""
        try:
            if not self._desired.apply(answer.version, answer.base, answer.units):
                log.info(
                    "srm copy slot %d: answer %d is relative to %s, this slot holds %d",
                    self.slot,
                    answer.version,
                    answer.base,
                    self._desired.version,
                )
                return False
        except ValueError as exc:
            log.error("srm copy slot %d: bad control answer %d: %s", self.slot, answer.version, exc)
            return False
        wanted = self._desired.flows
        for flow in wanted:
            try:
                plan = self._desired.plan(flow)
            except ValueError as exc:
                log.error("srm copy slot %d: bad plan for %s: %s", self.slot, flow, exc)
                continue
            unit = self._units.get(flow)
            if unit is None:
                lease = Lease()
                lease.grant(sent_at, _lease_of(answer.units.get(flow), answer.lease_ms))
                unit = _unit_kind(plan)(plan, lease, self.nudge)
                thread = threading.Thread(
                    target=unit.run, name=f"srm-copy {flow} slot {self.slot}", daemon=True
                )
                self._units[flow] = unit
                self._threads[flow] = thread
                thread.start()
            elif unit.batches != plan.batches:
                # srm.copy.batches changed: this unit stops; the driver re-plans its
                # partitions (a unit that ended), and the next answer starts the other kind.
                unit.request_stop()
            elif not unit.exited:
                unit.update(plan)
        for flow, unit in self._units.items():
            if flow not in wanted:
                unit.request_stop()
        return True

    def _stop_units(self) -> None:
        for unit in self._units.values():
            unit.request_stop()


def _lease_of(unit: Any, slot_lease_ms: int) -> int:
    value = unit.get("lease_ms") if isinstance(unit, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else slot_lease_ms


def _unit_kind(plan: UnitPlan) -> type[FlowUnit]:
    """The unit that copies ``plan``: the batch copy's (and its protocol layer) is
    imported only by a slot told to copy batches."""
    if not plan.batches:
        return FlowUnit
    from srm_driver.copier.batch_unit import BatchUnit

    return BatchUnit
