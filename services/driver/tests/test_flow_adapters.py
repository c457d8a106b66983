"""Each flow's adapters (srm_driver.copying.flow_adapters): built once and kept; a build
that failed is not tried again before ADAPTER_RETRY_S, its error given meanwhile."""

from __future__ import annotations

import threading

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
