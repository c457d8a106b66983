"""A worker of a Spark standalone cluster lost under load (issue 24): a master and two
1-core workers from the PySpark install, the driver with ``--spark-master spark://...``, a
numbered load at ~500 records/s into 4 partitions. The worker running copy slot 0 is
killed with ``kill -9`` together with its executor's JVM and Python workers, and brought
back as a supervisor would (a new worker process): Spark runs the lost slot task again
there. The driver must recognise the new run of the slot, fence the old one and hand it
the slot's partitions through the restart's verification, so copying resumes; every
record of source and target is compared after it did (nothing missing, nothing twice).

No timing is asserted: the content is waited for with a generous deadline, and how long
the killed slot's partitions paused is printed."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from srm_local import testing
from srm_local.spark_standalone import SparkStandalone
from srm_local.testing import DriverProcess, SteadyProducer, content, count_copy

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 4


@pytest.fixture
def spark_cluster(tmp_path: Path) -> Iterator[SparkStandalone]:
    cluster = SparkStandalone(tmp_path / "spark", workers=2, cores=1).start()
    yield cluster
    cluster.stop()


def _slot_worker(cluster: SparkStandalone, slot: int) -> str | None:
    for worker in ("worker-0", "worker-1"):
        if f"copy slot {slot} of job" in cluster.executor_log(worker):
            return worker
    return None


def _copy_status(driver: DriverProcess) -> dict:  # type: ignore[type-arg]
    """The flow's copy status from the driver's REST API, as an operator reads it."""
    url = re.search(r"REST at (http://\S+);", driver.log_text())
    assert url is not None
    status = testing.get_json(f"{url[1]}/v1/flows/primary/backup/status")
    return status["copy"]  # type: ignore[no-any-return]


def test_a_worker_killed_under_load_is_replaced_and_copying_resumes_exactly(
    kafka, spark_cluster, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    topic = kafka.create_topic(
        "primary", unique_name("workers"), partitions=PARTITIONS, config={"retention.ms": "-1"}
    )
    remote = f"primary.{topic}"
    config = testing.write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={"primary->backup": {"enabled": True, "topics": [topic]}},
    )
    driver = DriverProcess(config, tmp_path / "driver.log", spark_master=spark_cluster.master_url)
    producer = SteadyProducer(kafka["primary"], topic, PARTITIONS, per_tick=25)
    driver.start()
    try:
        producer.start()
        # Both slots copy (each worker's executor runs one) before the kill.
        testing.wait_until(
            lambda: _slot_worker(spark_cluster, 0) and _slot_worker(spark_cluster, 1),
            180,
            "both copy slots started on the workers",
            detail=lambda: driver.log_text()[-3000:],
        )
        testing.wait_until(
            lambda: all(end > 0 for end in testing.end_offsets(kafka["backup"], remote).values()),
            180,
            "every partition copying",
            detail=lambda: driver.log_text()[-3000:],
        )
        time.sleep(5)
        victim = _slot_worker(spark_cluster, 0)
        assert victim is not None
        at_kill = testing.end_offsets(kafka["backup"], remote)
        killed = spark_cluster.kill_worker(victim)
        kill_time = time.monotonic()
        print(
            f"\nkilled {victim} (pids {killed}) with slot 0 under load: {producer.sent} produced,"
            f" {sum(at_kill.values())} on the target"
        )
        # Brought back as a supervisor would: a new worker, where Spark runs slot 0 again.
        replacement = spark_cluster.add_worker()
        print(f"{replacement} started {time.monotonic() - kill_time:.1f} s after the kill")

        def resumed() -> bool:
            now = testing.end_offsets(kafka["backup"], remote)
            return all(now[p] > at_kill[p] for p in range(PARTITIONS))

        testing.wait_until(
            resumed,
            240,
            "every partition copying again after the kill",
            detail=lambda: driver.log_text()[-4000:],
        )
        paused = time.monotonic() - kill_time
        print(f"every partition copied again {paused:.1f} s after the kill")
        time.sleep(5)  # more load on the new run
        producer.finish()
        testing.wait_caught_up(
            kafka["primary"],
            topic,
            kafka["backup"],
            remote,
            240,
            detail=lambda: driver.log_text()[-4000:],
        )
        copy = _copy_status(driver)
    finally:
        producer.stop.set()
        stopped = driver.stop()
    assert stopped == 0, driver.log_text()[-3000:]
    source = testing.consume_all(kafka["primary"], topic)
    target = testing.consume_all(kafka["backup"], remote)
    counted = count_copy(source, target)
    print(f"after the kill and the take-over: {counted}")
    for partition in range(PARTITIONS):
        assert content(target[partition]) == content(source[partition]), partition
    assert counted.produced == producer.sent
    assert (counted.missing, counted.duplicated) == (0, 0)
    log = driver.log_text()
    assert "copy slot 0 re-run" in log, log[-3000:]
    assert not copy["halted"], "no partition taken for written by someone else"
    (rerun,) = copy["slot_reruns"]
    assert (rerun["slot"], rerun["previous_attempt"]) == (0, 0) and rerun["attempt"] > 0
    print(f"take-over shown in the status: {rerun}")
    assert "copy slot 0 of job" in spark_cluster.executor_log(replacement)
    print(f"test took {time.monotonic() - started:.0f} s")
