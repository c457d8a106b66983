"""The Python copy slot's control side, with a fake driver and fake units: leases counted
from the request, 410 and stop, refused flows, plans parsed; its lease, failure kinds and
the slot locks that tell the driver no slot process runs (:mod:`srm_driver.copier`)."""

from __future__ import annotations

import json
import logging
import multiprocessing
import random
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError
from srm_driver.copier import batch_unit, control
from srm_driver.copier import keep as keeping
from srm_driver.copier.failures import fatal_kind, kind_of
from srm_driver.copier.lease import Lease
from srm_driver.copier.plan import Desired, parse_plan
from srm_driver.copier.task import running_slots, slot_lock

SETTINGS = {
    "consumer": {"bootstrap.servers": "a:1"},
    "producer": {"bootstrap.servers": "b:1"},
    "origin_header": None,
    "copy_header": None,
    "source": "primary",
    "target": "backup",
    "poll_ms": 100,
}


def _unit(epoch: int = 0, lease_ms: int | None = 4000, partitions: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = {
        "epoch": epoch,
        "settings": SETTINGS,
        "partitions": [
            {"topic": "t", "partition": n, "plan": 1, "remote": "primary.t", "start": 0,
             "down": 0, "reserve": 100}
            for n in range(partitions)
        ],
    }  # fmt: skip
    if lease_ms is not None:
        body["lease_ms"] = lease_ms
    return body


# -- lease, plan, failure kinds ---------------------------------------------------------


def test_a_lease_counts_from_when_the_request_was_sent_and_never_moves_back() -> None:
    lease = Lease()
    assert not lease.valid() and lease.remaining_ms() == 0
    sent = time.monotonic_ns() - 3_000_000_000  # asked 3 s ago
    lease.grant(sent, 2000)
    assert not lease.valid(), "2 s counted from the request, which left 3 s ago"
    lease.grant(time.monotonic_ns(), 5000)
    assert lease.valid() and 4000 < lease.remaining_ms() <= 5000
    lease.grant(time.monotonic_ns(), 1000)
    assert lease.remaining_ms() > 4000, "a shorter grant does not shorten it"
    lease.grant(time.monotonic_ns(), 0)
    assert not lease.valid(), "0 revokes"
    lease.grant(time.monotonic_ns(), 1000)
    lease.revoke()
    assert not lease.valid()


def test_a_plan_is_parsed_from_the_answer_and_a_bad_field_named() -> None:
    plan = parse_plan("primary->backup", 7, _unit(epoch=2, partitions=2))
    assert (plan.version, plan.epoch, plan.poll_ms, plan.shared) == (7, 2, 100, False)
    assert plan.partitions[("t", 1)].remote == "primary.t"
    assert plan.consumer == {"bootstrap.servers": "a:1"}
    bad = _unit()
    bad["partitions"][0]["start"] = "0"
    with pytest.raises(ValueError, match="'start' is not a whole number"):
        parse_plan("f", 1, bad)
    with pytest.raises(ValueError, match="missing or bad field"):
        parse_plan("f", 1, {"epoch": 0, "partitions": []})


def test_a_record_the_target_refuses_is_poison_and_an_outage_transient() -> None:
    assert kind_of(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)) == "poison"
    assert kind_of(KafkaError(KafkaError.INVALID_TIMESTAMP)) == "poison"
    assert kind_of(KafkaError(KafkaError._MSG_TIMED_OUT)) == "transient"
    assert kind_of(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)) == "transient"
    assert kind_of(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)) == "transient"
    stopped = KafkaError(
        KafkaError._GAPLESS_GUARANTEE,
        "ProduceRequest for t [0] with 1 message(s) failed: Broker: Message size too large"
        " (broker 1 PID{Id:3,Epoch:0}, base seq 1): unable to satisfy gap-less guarantee",
        fatal=True,
    )
    assert fatal_kind(stopped) == "poison"
    fenced = KafkaError(KafkaError._FATAL, "Producer fenced by newer instance", fatal=True)
    assert fatal_kind(fenced) == "transient"


# -- slot locks: no slot process can still write -----------------------------------------


def _hold(folder: str, ready: Any) -> None:
    with slot_lock(folder, "job1", 0):
        ready.set()
        time.sleep(60)


def test_a_slot_lock_is_held_while_the_process_runs_and_released_when_it_is_killed(
    tmp_path: Path,
) -> None:
    assert running_slots(str(tmp_path)) == 0
    ready = multiprocessing.get_context("fork").Event()
    process = multiprocessing.get_context("fork").Process(target=_hold, args=(str(tmp_path), ready))
    process.start()
    try:
        assert ready.wait(10)
        assert running_slots(str(tmp_path)) == 1
        process.kill()  # SIGKILL: no clean-up runs, the kernel releases the lock
        process.join(10)
        assert running_slots(str(tmp_path)) == 0
    finally:
        if process.is_alive():
            process.kill()
    with slot_lock(str(tmp_path / "absent"), "job1", 1):
        pass  # no folder here (a cluster executor): nothing to hold


# -- the control exchange, against a fake driver ------------------------------------------


class FakeUnit:
    """Stands in for a FlowUnit: what the slot does with it, no Kafka."""

    made: list[FakeUnit] = []
    batches = False

    def __init__(self, plan: Any, lease: Lease, nudge: Any) -> None:
        self.flow, self.lease, self.plans = plan.flow, lease, [plan]
        self.exited = False
        self.stop_requested = False
        self.confirmed: list[Any] = []
        FakeUnit.made.append(self)

    def run(self) -> None:
        while not self.stop_requested:
            time.sleep(0.01)
        self.exited = True

    def update(self, plan: Any) -> None:
        self.plans.append(plan)

    def request_stop(self) -> None:
        self.stop_requested = True

    def report(
        self, counts: dict[Any, int], stopped: set[Any], sent: Any = None, *, full: bool = True
    ) -> tuple[dict[str, Any], bool]:
        counts[("t", 0, 1)] = 1
        entry = {"flow": self.flow, "epoch": 0, "exited": self.exited, "partitions": []}
        return entry, self.exited

    def confirm(self, counts: dict[Any, int], stopped: set[Any], sent: Any = None) -> None:
        self.confirmed.append(dict(counts))


class FakeDriver:
    """Answers reports with whatever ``answer(report)`` returns: (status, body)."""

    def __init__(self) -> None:
        self.reports: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.authorizations: list[str] = []
        self.answer = lambda report: (200, {})
        self.stopping = False
        self.exiting_at: list[float] = []
        driver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                driver.reports.append(body)
                driver.paths.append(self.path)
                driver.authorizations.append(self.headers["Authorization"])
                status, answer = driver.answer(body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


class FakeBatchUnit(FakeUnit):
    """Stands in for a BatchUnit (``srm.copy.batches``)."""

    batches = True


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDriver]:
    FakeUnit.made.clear()
    monkeypatch.setattr(control, "FlowUnit", FakeUnit)
    monkeypatch.setattr(batch_unit, "BatchUnit", FakeBatchUnit)  # (imported when wanted)
    fake = FakeDriver()
    yield fake
    fake.server.shutdown()


def _answer(version: int, units: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"protocol": 2, "version": version, "lease_ms": 4000, "report_ms": 20,
            "stop": False, "refused": [], "units": units, **extra}  # fmt: skip


def _run(slot: control.SlotRunner) -> threading.Thread:
    thread = threading.Thread(target=slot.run, daemon=True)
    thread.start()
    return thread


def _wait(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + 10
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_slot_starts_the_planned_unit_with_its_flows_lease_and_ends_when_told_to_stop(
    driver: FakeDriver,
) -> None:
    state = {"stop": False}
    driver.answer = lambda report: (
        200,
        _answer(report["seq"], {"primary->backup": _unit(lease_ms=3000)}, stop=state["stop"]),
    )
    thread = _run(control.SlotRunner(driver.url, "job1", 3, "s3cret"))
    _wait(lambda: FakeUnit.made and len(driver.reports) > 3, "the unit starts and reports go on")
    unit = FakeUnit.made[0]
    assert 2000 < unit.lease.remaining_ms() <= 3000, "the flow's own lease, from the answer"
    assert driver.authorizations[0] == "Bearer s3cret"
    first = driver.reports[0]
    assert (first["job"], first["slot"], first["seq"], first["answered"]) == ("job1", 3, 0, -1)
    assert driver.reports[-1]["answered"] >= 0 and driver.reports[-1]["units"]
    assert unit.confirmed and unit.confirmed[0] == {("t", 0, 1): 1}
    state["stop"] = True
    thread.join(10)
    assert not thread.is_alive() and unit.stop_requested and unit.exited
    assert driver.reports[-1]["exiting"] is True, "its last report says it is exiting"


def _ending(driver: FakeDriver, refuse_s: float, first_answer_s: float = 0.0) -> list[int]:
    """Answer every report, with stop once ``driver.stopping`` is set; refuse flow "f"'s
    part of the exiting reports for ``refuse_s`` from the first (the driver's write of it
    failing, or still running), the first answered only after ``first_answer_s`` (a write
    that takes the driver's whole budget); the seqs of exiting reports taken. When each
    exiting report came: ``driver.exiting_at``."""
    taken: list[int] = []
    first: list[float] = []
    driver.exiting_at = []

    def answer(report: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        refused = []
        if report["exiting"]:
            driver.exiting_at.append(time.monotonic())
            first.append(first[0] if first else time.monotonic())
            if len(first) == 1:
                time.sleep(first_answer_s)
            if time.monotonic() - first[0] < refuse_s:
                refused = ["f"]
            else:
                taken.append(report["seq"])
        return 200, _answer(report["seq"], {"f": _unit()}, stop=driver.stopping, refused=refused)

    driver.answer = answer
    return taken


def test_an_ending_slot_reports_its_last_part_again_until_the_driver_takes_it(
    driver: FakeDriver,
) -> None:
    taken = _ending(driver, refuse_s=1.0)
    thread = _run(control.SlotRunner(driver.url, "job1", 0, "s"))
    _wait(lambda: FakeUnit.made and len(driver.reports) > 2, "the unit runs")
    driver.stopping = True
    thread.join(10)
    assert not thread.is_alive()
    assert taken == [driver.reports[-1]["seq"]], "it ended before its last part was taken"
    (unit,) = FakeUnit.made
    exiting = [report for report in driver.reports if report["exiting"]]
    assert len(exiting) > 3 and all(r["units"] for r in exiting), "its part, every time"
    assert unit.confirmed, "confirmed once taken"


def test_an_ending_slot_whose_last_part_is_never_taken_still_ends(
    driver: FakeDriver, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """It asks again for about FINAL_REPORT_S (not a few tries), then ends and says so."""
    monkeypatch.setattr(control, "FINAL_REPORT_S", 0.5)
    taken = _ending(driver, refuse_s=60)
    thread = _run(control.SlotRunner(driver.url, "job1", 0, "s"))
    _wait(lambda: FakeUnit.made and len(driver.reports) > 2, "the unit runs")
    with caplog.at_level(logging.WARNING, logger=control.__name__):
        driver.stopping = True
        thread.join(10)
    assert not thread.is_alive() and not taken
    asked = driver.exiting_at
    assert len(asked) > 3, "more than the three tries of old"
    # About FINAL_REPORT_S (0.5 s), far less than the refusal (60 s); the bound above has
    # room for a loaded host, where the last try reaches the fake driver late.
    assert 0.3 <= asked[-1] - asked[0] < 5, "asked again for FINAL_REPORT_S, no longer"
    said = [r.getMessage() for r in caplog.records]
    assert any("ending with its last report not recorded (refused for" in m for m in said)


def test_an_ending_slot_counts_its_time_from_when_its_first_exiting_report_left(
    driver: FakeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first answer takes the driver's whole write budget: that counts into
    FINAL_REPORT_S (the driver's stop bound is counted from its stop, not from an answer),
    so the slot ends within FINAL_REPORT_S of its first exiting report, plus one try."""
    monkeypatch.setattr(control, "FINAL_REPORT_S", 1.0)
    taken = _ending(driver, refuse_s=60, first_answer_s=1.0)
    thread = _run(control.SlotRunner(driver.url, "job1", 0, "s"))
    _wait(lambda: FakeUnit.made and len(driver.reports) > 2, "the unit runs")
    driver.stopping = True
    thread.join(10)
    ended = time.monotonic()
    assert not thread.is_alive() and not taken
    assert ended - driver.exiting_at[0] < 1.5, "the slow first answer counted in"


def test_a_flow_that_copies_batches_gets_a_batch_unit_and_a_change_of_the_setting_restarts_it(
    driver: FakeDriver,
) -> None:
    state = {"batches": True}

    def answer(report: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        unit = _unit()
        if state["batches"]:
            unit["settings"] = {**SETTINGS, "batches": {"window": 100}}
        return 200, _answer(report["seq"], {"f": unit})

    driver.answer = answer
    thread = _run(control.SlotRunner(driver.url, "job1", 0, "s"))
    _wait(lambda: len(driver.reports) > 3, "the unit starts")
    (first,) = FakeUnit.made
    assert type(first) is FakeBatchUnit and first.plans[-1].batch_window == 100
    state["batches"] = False
    _wait(lambda: len(FakeUnit.made) == 2, "the unit of the other kind starts")
    assert first.stop_requested and first.exited
    assert type(FakeUnit.made[1]) is FakeUnit and not FakeUnit.made[1].plans[0].batches
    driver.answer = lambda report: (410, {"error": "over"})
    thread.join(10)


def test_an_answer_410_revokes_every_lease_and_ends_the_slot(driver: FakeDriver) -> None:
    answers = iter([(200, _answer(0, {"f": _unit()}))])
    driver.answer = lambda report: next(answers, (410, {"error": "copy job job1 is over"}))
    thread = _run(control.SlotRunner(driver.url, "job1", 0, "s"))
    thread.join(10)
    assert not thread.is_alive()
    (unit,) = FakeUnit.made
    assert not unit.lease.valid() and unit.stop_requested


def test_a_flow_the_driver_refused_keeps_its_part_and_a_flow_left_out_is_stopped(
    driver: FakeDriver,
) -> None:
    state = {"refused": ["f"], "units": {"f": _unit(), "g": _unit()}}
    driver.answer = lambda report: (
        200,
        _answer(report["seq"], dict(state["units"]), refused=state["refused"]),
    )
    thread = _run(control.SlotRunner(driver.url, "job1", 0, "s"))
    _wait(lambda: len(FakeUnit.made) == 2 and len(driver.reports) > 3, "both units run")
    f, g = sorted(FakeUnit.made, key=lambda unit: unit.flow)
    assert not f.confirmed, "a refused flow's syncs are reported again"
    assert g.confirmed
    state["units"] = {"f": _unit()}
    _wait(lambda: g.stop_requested, "a unit the answer leaves out is stopped")
    assert not f.stop_requested
    driver.answer = lambda report: (410, {})
    thread.join(10)


def test_a_report_the_driver_cannot_take_changes_nothing_and_a_bad_plan_starts_nothing(
    driver: FakeDriver,
) -> None:
    bad = _unit()
    bad["epoch"] = "two"
    answers = iter([(200, _answer(0, {"f": bad}))])
    driver.answer = lambda report: next(answers, (503, {"error": "busy"}))
    slot = control.SlotRunner(driver.url, "job1", 0, "s")
    thread = _run(slot)
    _wait(lambda: len(driver.reports) > 2, "the slot keeps reporting")
    assert not FakeUnit.made, "a plan that cannot be read starts no unit"
    driver.answer = lambda report: (410, {})
    thread.join(10)
    assert not thread.is_alive()


def test_a_delta_answer_is_applied_only_onto_the_version_the_slot_holds(
    driver: FakeDriver,
) -> None:
    whole = _unit(partitions=2)
    one = {**whole, "partitions": whole["partitions"][:1]}
    delta = {"epoch": 0, "lease_ms": 4000, "partitions": [], "removed": [["t", 1]]}

    def answer(report: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        seq = report["seq"]
        if seq == 0:
            return 200, _answer(0, {"f": whole})
        if seq == 1:  # a delta onto a version the slot does not hold: not applied
            return 200, _answer(1, {"f": delta}, base=99)
        if seq == 2:
            return 200, _answer(2, {"f": delta}, base=report["answered"])
        return 200, _answer(seq, {"f": {**delta, "removed": []}}, base=report["answered"])

    driver.answer = answer
    slot = control.SlotRunner(driver.url, "job1", 0, "s")
    thread = _run(slot)
    _wait(lambda: len(driver.reports) > 4, "reports go on")
    slot.nudge()
    (unit,) = FakeUnit.made
    assert driver.reports[0]["protocol"] == 2 and driver.reports[0]["full"] is True
    assert driver.reports[2]["answered"] == 0, "the delta onto 99 was not applied"
    assert driver.reports[3]["answered"] == 2
    assert set(unit.plans[-1].partitions) == set(parse_plan("f", 0, one).partitions)
    assert unit.plans[-1].consumer == parse_plan("f", 0, whole).consumer, "settings kept"
    driver.answer = lambda report: (410, {"error": "over"})
    thread.join(10)


def test_an_answer_of_a_driver_of_another_protocol_stops_the_slot(driver: FakeDriver) -> None:
    first = iter([(200, _answer(0, {"f": _unit()}))])

    def answer(report: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        older = _answer(report["seq"], {"f": _unit()})
        del older["protocol"]
        return next(first, (200, older))

    driver.answer = answer
    thread = _run(control.SlotRunner(driver.url, "job1", 0, "s"))
    thread.join(10)
    assert not thread.is_alive(), "it ended"
    (unit,) = FakeUnit.made
    assert not unit.lease.valid() and unit.stop_requested


@pytest.mark.parametrize("seed", range(200))
def test_deltas_fold_to_the_whole_state_and_an_applied_mapping_never_changes(seed: int) -> None:
    """Property (200 seeded sequences): whatever whole answers and deltas come, the plans
    held equal a model that applies them to a plain dict; a mapping handed out is never
    changed afterwards (a unit compares plans by identity), and a delta that changes
    nothing keeps the same one."""
    rng = random.Random(seed)
    steps = [
        (
            rng.random() < 0.3,  # a whole answer, or a delta
            {rng.randrange(8): rng.randrange(1, 5) for _ in range(rng.randrange(5))},  # plans
            {rng.randrange(8) for _ in range(rng.randrange(4))},  # removed (deltas)
        )
        for _ in range(rng.randrange(13))
    ]
    desired = Desired()
    model: dict[tuple[str, int], int] = {}
    handed: list[tuple[Any, dict[Any, Any]]] = []
    for version, (whole, plans, removed) in enumerate(steps):
        entries = [_entry(n, plan) for n, plan in plans.items()]
        if whole or desired.version < 0:
            body = {"epoch": 0, "settings": SETTINGS, "partitions": entries}
            assert desired.apply(version, None, {"f": body})
            model = {("t", n): plan for n, plan in plans.items()}
        else:
            before = desired.plan("f").partitions
            body = {
                "epoch": 0,
                "partitions": entries,
                "removed": [["t", n] for n in sorted(removed)],
            }
            assert desired.apply(version, desired.version, {"f": body})
            for n in removed:
                model.pop(("t", n), None)
            model.update({("t", n): plan for n, plan in plans.items()})
            if not plans and not removed:
                assert desired.plan("f").partitions is before, "nothing changed: same mapping"
        held = desired.plan("f").partitions
        assert {key: wanted.plan for key, wanted in held.items()} == model
        handed.append((held, dict(held)))
    for mapping, copy in handed:
        assert dict(mapping) == copy, "a mapping handed out was changed later"


def _entry(partition: int, plan: int) -> dict[str, Any]:
    return {"topic": "t", "partition": partition, "plan": plan, "remote": "a.t", "start": 0,
            "down": 0, "reserve": 10}  # fmt: skip


# -- an answer slow to come: the slot keeps its leases meanwhile ----------------------------


def _late_second_answer(keeps: list[dict[str, Any]], keep: tuple[int, dict[str, Any]]) -> Any:
    """A driver that takes 4 s to answer report 1 (its progress waits on a busy target),
    gives 1.5 s leases, and answers each lease keep (recorded in ``keeps``) with ``keep``
    (a 410 then answers everything after it, as a driver does)."""

    def answer(report: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if "seq" not in report:
            keeps.append(report)
            return keep
        if keeps and keep[0] == 410:
            return keep  # the run is over for every request
        if report["seq"] == 1:
            time.sleep(4.0)
        return 200, _answer(report["seq"], {"f": _unit(lease_ms=1500)})

    return answer


def test_a_late_answer_does_not_let_the_leases_run_out_and_is_applied_when_it_comes(
    driver: FakeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Report 1's answer takes 4 s, more than two leases: past KEEP_AFTER_S the slot
    asks for its leases alone, so its unit never loses its lease (before, it stopped and
    every partition was re-verified and restarted); the late answer is applied."""
    monkeypatch.setattr(keeping, "KEEP_AFTER_S", 0.2)
    monkeypatch.setattr(keeping, "KEEP_EVERY_S", 0.2)
    keeps: list[dict[str, Any]] = []
    keep = (200, {"protocol": 2, "units": {"f": {"lease_ms": 1500}}, "recording": True})
    driver.answer = _late_second_answer(keeps, keep)
    slot = control.SlotRunner(driver.url, "job1", 0, "s", run={"id": "r1", "attempt": 0})
    thread = _run(slot)
    _wait(lambda: len(driver.reports) >= 2, "report 1 is sent")
    (unit,) = FakeUnit.made
    deadline = time.monotonic() + 3.8
    while time.monotonic() < deadline:
        assert unit.lease.valid(), "the lease is kept while the answer is late"
        time.sleep(0.05)
    _wait(lambda: any(r.get("answered") == 1 for r in driver.reports), "the late answer applied")
    assert len(keeps) >= 3 and all(k["run"]["id"] == "r1" for k in keeps)
    assert sum(path.endswith("/slots/0/lease") for path in driver.paths) == len(keeps)
    driver.answer = lambda report: (410, {})
    thread.join(10)


def test_a_lease_keep_answered_410_ends_the_slot(
    driver: FakeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The slot was found lost while its report was recorded: its keep is told 410, and
    it revokes its leases, stops and ends without waiting for the answer."""
    monkeypatch.setattr(keeping, "KEEP_AFTER_S", 0.2)
    keeps: list[dict[str, Any]] = []
    driver.answer = _late_second_answer(keeps, (410, {"error": "copy slot 0 was lost"}))
    thread = _run(control.SlotRunner(driver.url, "job1", 0, "s"))
    thread.join(10)
    assert not thread.is_alive() and keeps
    (unit,) = FakeUnit.made
    assert not unit.lease.valid() and unit.stop_requested


def test_a_report_lost_on_its_way_is_sent_again_once_keeps_find_none_being_recorded(
    driver: FakeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Report 1 never reaches the driver's desk (a connection that went dead): the keeps
    say no report of the slot is being recorded, so after five of them the slot reports
    again instead of waiting out the answer's whole timeout (20 s)."""
    monkeypatch.setattr(keeping, "KEEP_AFTER_S", 0.2)
    monkeypatch.setattr(keeping, "KEEP_EVERY_S", 0.2)
    keeps: list[dict[str, Any]] = []
    idle = (200, {"protocol": 2, "units": {"f": {"lease_ms": 4000}}, "recording": False})
    lost = threading.Event()

    def answer(report: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if "seq" not in report:
            keeps.append(report)
            return idle
        if report["seq"] == 1:
            lost.wait(30)  # never answered while the test runs
        return 200, _answer(report["seq"], {"f": _unit()})

    driver.answer = answer
    thread = _run(control.SlotRunner(driver.url, "job1", 0, "s"))
    started = time.monotonic()
    _wait(lambda: any(r.get("seq") == 2 for r in driver.reports), "report 2 is sent")
    assert time.monotonic() - started < 5 and len(keeps) >= 5
    (unit,) = FakeUnit.made
    assert unit.lease.valid(), "the keeps kept the lease meanwhile"
    lost.set()
    driver.answer = lambda report: (410, {})
    thread.join(10)
