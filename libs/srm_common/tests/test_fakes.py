"""The shared fakes of srm_common.testing behave as the code under test expects of what
they stand in for (a fake that drifts makes every test using it say less)."""

from __future__ import annotations

from srm_common.testing import Clock


def test_the_clock_reads_seconds_and_moves_only_when_moved() -> None:
    clock = Clock(1_500)
    assert clock() == clock.monotonic() == 1.5
    assert clock() == 1.5, "reading it does not move it"
    clock.at_ms += 2_000
    assert (clock(), clock.at_ms) == (3.5, 3_500)
    clock.now += 0.25
    assert clock.at_ms == 3_750


def test_the_clock_sleeps_by_moving_and_records_each_sleep() -> None:
    clock = Clock()
    clock.sleep(0.2)
    clock.sleep(0.4)
    assert clock.slept == [0.2, 0.4]
    assert abs(clock() - 0.6) < 1e-9
