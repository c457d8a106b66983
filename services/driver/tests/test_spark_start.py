"""Spark starts beside the flows (srm_driver.spark.SparkStart): what needs no Spark (a
flow's remote topics: test_flow_worker.py) goes on while it starts; a Spark that cannot
start stops the driver with why."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from srm_driver.runtime import DriverRuntime
from srm_driver.spark import SparkSetupError, SparkStart

TopicPartition = tuple[str, int]


class FakeSession:
    """What stop_session touches of a session."""

    def __init__(self) -> None:
        self.stopped = False
        self.sparkContext = SimpleNamespace(
            master="local[2]", _gateway=SimpleNamespace(shutdown=lambda: None, proc=None)
        )

    def stop(self) -> None:
        self.stopped = True


def test_the_session_is_none_while_spark_starts_then_the_session() -> None:
    release = threading.Event()
    session = FakeSession()

    def start() -> FakeSession:
        release.wait(10)
        return session

    spark = SparkStart("local[2]", start).begin()  # type: ignore[arg-type]
    assert spark.session() is None, "still starting"
    release.set()
    spark._thread.join(10)  # noqa: SLF001 - the start has ended
    assert spark.session() is session
    spark.stop()
    assert session.stopped, "the Spark it started is stopped with the driver"


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        (SparkSetupError("Spark did not start with master 'x': no Java"), "no Java"),
        (RuntimeError("Py4J gateway exited"), "Spark did not start with master 'local[2]'"),
    ],
)
def test_a_spark_that_cannot_start_says_why_when_asked(raised: Exception, said: str) -> None:
    def start() -> FakeSession:
        raise raised

    spark = SparkStart("local[2]", start).begin()  # type: ignore[arg-type]
    spark._thread.join(10)  # noqa: SLF001
    with pytest.raises(SparkSetupError, match=said.replace("[", r"\[").replace("]", r"\]")):
        spark.session()
    spark.stop()  # nothing to stop, and no error


def test_a_session_started_elsewhere_is_ready_and_left_running() -> None:
    session = FakeSession()
    spark = SparkStart.running(session)  # type: ignore[arg-type]
    assert spark.session() is session and spark.master == "local[2]"
    spark.stop()
    assert not session.stopped


class Source:
    def __init__(self) -> None:
        self.changed = threading.Event()
        self.closed = False

    def fatal(self) -> str | None:
        return None

    def assignment(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True


class FailedSpark:
    def __init__(self) -> None:
        self.ticks = 0

    def tick(self) -> None:
        self.ticks += 1

    def fatal(self) -> str | None:
        return "Spark did not start with master 'local[2]': no Java" if self.ticks else None

    def held(self, flow: str) -> frozenset[TopicPartition]:
        return frozenset()

    def stop(self, timeout: float) -> None: ...


def test_the_driver_stops_when_spark_cannot_start() -> None:
    source, copy = Source(), FailedSpark()
    runtime = DriverRuntime(
        source=source,  # type: ignore[arg-type]
        copy=copy,  # type: ignore[arg-type]
        flow_topics=lambda flow: None,  # type: ignore[arg-type,return-value]
        heartbeat=lambda flow, stop: None,  # type: ignore[arg-type,return-value]
        checkpoints=lambda *_: None,  # type: ignore[arg-type,return-value]
    )
    thread = threading.Thread(target=runtime.run, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "the runtime stopped on its own"
    assert source.closed and copy.ticks >= 1
