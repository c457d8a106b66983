"""The leader's fencer: each cluster written on its own thread, acknowledged positions,
retries, and a down cluster that delays only itself."""

from __future__ import annotations

import threading
import time

from srm_common.control.fences import Fence
from srm_common.errors import ControlLogError
from srm_coordinator.fencing import Fencer


def wait_until(check, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.01)


class Cluster:
    """A fence topic: ``down`` refuses writes."""

    def __init__(self) -> None:
        self.written: list[Fence] = []
        self.down = False
        self.lock = threading.Lock()

    def write(self, fence: Fence, timeout: float) -> None:
        if self.down:
            raise ControlLogError("no answer")
        with self.lock:
            self.written.append(fence)

    def close(self) -> None:
        pass


def test_each_cluster_acknowledges_on_its_own_and_a_down_one_catches_up() -> None:
    clusters = {"b": Cluster(), "c": Cluster()}
    clusters["c"].down = True
    fencer = Fencer(clusters, clusters.__getitem__)
    try:
        fencer.want(Fence("L", 7, 1, frozenset({("d1", "a")})))
        wait_until(lambda: fencer.acked("b") is not None, 5, "b acknowledges")
        assert fencer.acked("b")[0] == 7
        assert fencer.acked("c") is None
        assert fencer.status()["c"]["error"] == "no answer"
        clusters["c"].down = False
        wait_until(lambda: fencer.acked("c") is not None, 5, "c acknowledges once it is up")
        before = time.monotonic()
        fencer.want(Fence("L", 9, 1, frozenset()))
        wait_until(lambda: fencer.acked("c")[0] == 9, 5, "the newer fence")
        assert fencer.acked("c")[1] >= before, "acknowledged after it was wanted"
        assert [f.position for f in clusters["b"].written][-1] == 9
    finally:
        fencer.close()


def test_the_fence_in_force_is_written_again_after_the_rewrite_interval() -> None:
    cluster = Cluster()
    fencer = Fencer(["b"], lambda _name: cluster, rewrite_s=0.2)
    try:
        fencer.want(Fence("L", 3, 1, frozenset()))
        wait_until(lambda: len(cluster.written) >= 3, 10, "written again and again")
        assert {f.position for f in cluster.written} == {3}
    finally:
        fencer.close()
