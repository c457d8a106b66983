"""Runs of a copy slot: which report's run is current, newer or over (pure), and what a
slot's run says about itself."""

from __future__ import annotations

from srm_driver.copier.task import slot_run
from srm_driver.copying.protocol import SlotRun, parse_report
from srm_driver.copying.runs import admit

FIRST = SlotRun("a1", 0, "executor 0 (host-a)")


def test_the_first_run_of_a_slot_is_current_and_stays_so() -> None:
    assert admit(None, FIRST) == "current"
    assert admit(FIRST, SlotRun("a1", 0, "executor 0 (host-a)")) == "current"


def test_a_higher_attempt_takes_over_and_any_other_run_is_over() -> None:
    assert admit(FIRST, SlotRun("b2", 1, "executor 2 (host-b)")) == "newer"
    again = SlotRun("b2", 1)
    assert admit(again, FIRST) == "superseded", "the old run, back from a pause"
    assert admit(again, SlotRun("c3", 1)) == "superseded", "the same attempt twice: the first"


def test_a_slot_of_an_older_version_is_one_run() -> None:
    body = {"job": "j", "slot": 0, "seq": 1, "exiting": False, "units": []}
    report = parse_report(body)
    assert report.run == SlotRun() and admit(SlotRun(), report.run) == "current"


def test_a_run_names_itself_in_its_report() -> None:
    body = {"job": "j", "slot": 0, "seq": 1, "exiting": False, "units": [],
            "run": {"id": "b2", "attempt": 1, "executor": "executor 2 (host-b)"}}  # fmt: skip
    assert parse_report(body).run == SlotRun("b2", 1, "executor 2 (host-b)")
    mine, other = slot_run(), slot_run()
    assert mine["attempt"] == 0, "outside Spark: attempt 0"
    assert mine["id"] != other["id"] and mine["executor"]
