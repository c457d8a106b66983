"""Each pair's heartbeats on a thread of its own: a dead target delays no other pair."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from srm_common.config import load_config
from srm_common.config.model import SrmConfig
from srm_common.errors import SrmError
from srm_driver.heartbeats import HeartbeatEmitter

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
  gone: {bootstrap.servers: "127.0.0.1:9"}
flows:
  primary->backup: {enabled: true}
"""


class FakeTask:
    """Counts beats; ``stuck`` blocks prepare() as a cluster that does not answer would."""

    def __init__(self, stuck: threading.Event | None = None, fails: bool = False) -> None:
        self.stuck = stuck
        self.fails = fails
        self.beats = 0
        self.prepared = 0
        self.closed = False
        self._due = 0.0

    def prepare(self) -> None:
        self.prepared += 1
        if self.stuck is not None:
            self.stuck.wait(30)
        if self.fails:
            raise SrmError("cannot create heartbeats: timed out")

    def seconds_until_due(self) -> float:
        return max(0.0, self._due - time.monotonic())

    def beat(self) -> None:
        self.beats += 1
        self._due = time.monotonic() + 0.05

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def config(tmp_path: Path) -> SrmConfig:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    return load_config(path)


def wait_for(condition, seconds: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_pair_whose_target_hangs_delays_no_other_pair(config: SrmConfig) -> None:
    stop, stuck = threading.Event(), threading.Event()
    dead, live = FakeTask(stuck), FakeTask()
    emitters = [
        HeartbeatEmitter(config.flow("primary", "gone"), stop, dead),  # type: ignore[arg-type]
        HeartbeatEmitter(config.flow("primary", "backup"), stop, live),  # type: ignore[arg-type]
    ]
    for emitter in emitters:
        emitter.start()
    try:
        assert wait_for(lambda: live.beats >= 5), "the live pair kept beating"
        assert dead.prepared == 1 and dead.beats == 0
    finally:
        stop.set()
        stuck.set()
        for emitter in emitters:
            emitter.join(10)
    assert not any(e.is_alive() for e in emitters)
    assert dead.closed and live.closed


def test_a_failed_prepare_is_retried_and_halt_stops_only_that_pair(config: SrmConfig) -> None:
    stop = threading.Event()
    failing, other = FakeTask(fails=True), FakeTask()
    first = HeartbeatEmitter(config.flow("primary", "gone"), stop, failing)  # type: ignore[arg-type]
    second = HeartbeatEmitter(config.flow("primary", "backup"), stop, other)  # type: ignore[arg-type]
    first.start()
    second.start()
    try:
        assert wait_for(lambda: failing.prepared == 1 and other.beats >= 2)
        first.halt()
        first.join(10)
        assert not first.is_alive() and failing.closed
        beats = other.beats
        assert wait_for(lambda: other.beats > beats), "halting one pair left the other"
    finally:
        stop.set()
        second.join(10)
