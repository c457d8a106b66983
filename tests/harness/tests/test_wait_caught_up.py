"""srm_harness.waits.wait_caught_up with ``stalled_after``: it waits as long as the target
grows and fails once it stops, on a fake clock and scripted end offsets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from srm_common.testing import Clock
from srm_harness import waits
from srm_harness.waits import wait_caught_up

SOURCE_ENDS = {0: 100, 1: 100}


def _script(monkeypatch: pytest.MonkeyPatch, target: Iterator[dict[int, int]]) -> Clock:
    clock = Clock()
    monkeypatch.setattr(waits, "time", clock)

    def end_offsets(bootstrap: str, topic: str, client: object = None) -> dict[int, int]:
        return dict(SOURCE_ENDS) if bootstrap == "source" else next(target)

    monkeypatch.setattr(waits, "end_offsets", end_offsets)
    return clock


def _growing(step: int) -> Iterator[dict[int, int]]:
    done = 0
    while True:
        yield {0: min(done, 100), 1: min(done, 100)}
        done += step


def test_a_slow_catch_up_that_keeps_growing_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """One record a partition per poll (0.5 s): 50 s in all, far past ``stalled_after``."""
    clock = _script(monkeypatch, _growing(1))
    wait_caught_up("source", "t", "target", "source.t", 900, stalled_after=10)
    assert 49 <= clock.now <= 51


def test_a_target_that_stops_growing_fails_after_the_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    def stops_at_40() -> Iterator[dict[int, int]]:
        for ends in _growing(10):
            yield ends if ends[0] < 40 else {0: 40, 1: 40}

    clock = _script(monkeypatch, stops_at_40())
    with pytest.raises(TimeoutError, match=r"nothing new for 10 s; 80 of 200 records"):
        wait_caught_up("source", "t", "target", "source.t", 900, stalled_after=10)
    assert 11 <= clock.now <= 13  # 40 reached at 2 s, then 10 s without growth


def test_the_timeout_still_bounds_a_wait_that_keeps_growing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never_done() -> Iterator[dict[int, int]]:
        n = 0
        while True:
            n += 1
            yield {0: 0, 1: n}  # grows, never reaches partition 0's end

    clock = _script(monkeypatch, never_done())
    with pytest.raises(TimeoutError, match="not within 60 s"):
        wait_caught_up("source", "t", "target", "source.t", 60, stalled_after=10)
    assert 60 <= clock.now <= 61


def test_without_stalled_after_the_timeout_is_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _script(monkeypatch, _growing(1))
    with pytest.raises(TimeoutError, match="the target catches up: not within 20 s"):
        wait_caught_up("source", "t", "target", "source.t", 20)
    assert 20 <= clock.now <= 21
