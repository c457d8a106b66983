"""Each flow's adapters (srm_driver.copying.flow_adapters): built once and kept; a build
that failed is not tried again before ADAPTER_RETRY_S, its error given meanwhile."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from srm_common.errors import SrmError
from srm_common.testing import Clock
from srm_driver.copying.flow_adapters import ADAPTER_RETRY_S, FlowAdapterCache

FLOW = "primary->backup"


class Factory:
    """Fails while ``failing`` is set; counts every build it is asked for."""

    def __init__(self) -> None:
        self.calls = 0
        self.failing: str | None = "backup does not answer"

    def __call__(self, flow: object) -> object:
        self.calls += 1
        if self.failing:
            raise SrmError(self.failing)
        return f"adapters of {flow}"


def test_a_failed_build_is_tried_again_only_after_the_retry_delay_and_then_kept() -> None:
    clock = Clock(1_000_000)
    make = Factory()
    cache = FlowAdapterCache(make, {FLOW: "flow"}, threading.RLock(), clock)  # type: ignore[arg-type, dict-item]
    with pytest.raises(SrmError, match="backup does not answer"):
        cache.get(FLOW)
    make.failing = None
    clock.now += ADAPTER_RETRY_S - 0.1
    with pytest.raises(SrmError, match="backup does not answer"):
        cache.get(FLOW)  # the last failure's error, no new build
    assert make.calls == 1
    clock.now += 0.1
    assert cache.get(FLOW) == "adapters of flow"
    assert cache.get(FLOW) == "adapters of flow"
    assert make.calls == 2, "built once, then kept"
    assert cache.built == {FLOW: "adapters of flow"}


def test_two_threads_asking_at_once_build_the_adapters_once() -> None:
    """A flow's topics and planning threads both ask for its adapters: the second waits
    for the first's build instead of building (and leaving open) a second set."""
    building, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow(flow: object) -> object:
        calls.append(str(flow))
        building.set()
        release.wait(10)
        return f"adapters of {flow}"

    cache = FlowAdapterCache(slow, {FLOW: "flow"}, threading.RLock(), Clock(0))  # type: ignore[arg-type, dict-item]
    got: list[object] = []
    first = threading.Thread(target=lambda: got.append(cache.get(FLOW)))
    first.start()
    assert building.wait(10)
    second = threading.Thread(target=lambda: got.append(cache.get(FLOW)))
    second.start()
    second.join(0.2)
    assert second.is_alive(), "the second asker waits for the build under way"
    release.set()
    first.join(10)
    second.join(10)
    assert got == ["adapters of flow", "adapters of flow"]
    assert calls == ["flow"], "built once"


def test_a_flow_whose_build_hangs_holds_up_no_other_flow() -> None:
    release = threading.Event()

    building = threading.Event()

    def make(flow: object) -> object:
        if flow == "stuck":
            building.set()
            release.wait(60)
        return f"adapters of {flow}"

    flows = {"a->b": "stuck", "c->d": "quick"}
    cache = FlowAdapterCache(make, flows, threading.RLock(), Clock(0))  # type: ignore[arg-type]
    stuck = threading.Thread(target=lambda: cache.get("a->b"))
    stuck.start()
    got: list[object] = []
    try:
        assert building.wait(10)
        quick = threading.Thread(target=lambda: got.append(cache.get("c->d")))
        quick.start()
        quick.join(10)  # (at once, unless it waits for the other flow's build)
        assert got == ["adapters of quick"]
    finally:
        release.set()
        stuck.join(10)


def test_built_adapters_and_unchanged_sizes_are_answered_while_a_report_holds_the_lock() -> None:
    """A flow's topics thread asks for its adapters and sizes its clients at every pass; a
    report of 15,000 partitions holds the ledger's lock about a second. Once built (and while
    the sizes do not change) neither waits for that lock."""
    lock = threading.RLock()
    built = SimpleNamespace(settings=None)  # sized only when a size changes (not here)
    cache = FlowAdapterCache(lambda _f: built, {FLOW: "flow"}, lock, Clock(0))  # type: ignore[arg-type, dict-item, return-value]
    cache.get(FLOW)
    cache._sized[FLOW] = (1_000_000, 4)  # noqa: SLF001 - as a pass before this one sized them
    held, release = threading.Event(), threading.Event()

    def report() -> None:
        with lock:
            held.set()
            release.wait(60)

    holder = threading.Thread(target=report)
    holder.start()
    answered: list[object] = []
    try:
        assert held.wait(10)
        asker = threading.Thread(
            target=lambda: answered.extend([cache.get(FLOW), cache.size(FLOW, 1_000_000, 3.5)])
        )
        asker.start()
        asker.join(10)  # (at once, unless it waits for the report)
        assert answered == [built, None]
    finally:
        release.set()
        holder.join(10)
