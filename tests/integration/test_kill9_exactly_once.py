"""Exactly once across kill -9: the driver dies at random moments under a steady load.

Producers write numbered records the whole time to two 4-partition topics of one flow,
one uncompressed and one zstd. The driver (Python and its Spark JVM, one process group)
is killed with SIGKILL at random moments while it copies, and restarted each time. At
the end every source partition of both topics and its remote twin must hold the same
records in the same order: none missing, none twice; and the zstd topic's copy is still
zstd across every restart.

The record copy (``srm.copy.batches = false``): the copy of flows that cannot pass
batches through (a shared target, Kerberos). The batch copy, the default, has its own
kill -9 test (``test_batch_copy.py``).

Both codecs share one driver and its kills (they were one run each: twice the Spark
starts for the same kills; docs/testing.md, "Where the time goes").
"""

from __future__ import annotations

import random
import time

import pytest
from srm_harness.clients import SteadyProducer, consume_all, end_offsets
from srm_harness.compare import content, count_copy
from srm_harness.control import get_json, write_config
from srm_harness.log_batches import WORTH_COMPRESSING, data_codecs, log_batches
from srm_harness.processes import DriverProcess
from srm_harness.waits import wait_caught_up, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 4
KILLS = 6
CODECS = ("none", "zstd")
# Per producer, every 50 ms: two topics at ~500 records/s each. Each codec was a run of
# its own at ~1,500 records/s, whose backlog after six restarts under a loaded machine
# (350,000 records) did not catch up within 180 s; two-thirds of that load in all still
# writes to every partition at every kill.
PER_TICK = 25


def test_kill9_at_random_moments_loses_and_doubles_nothing(kafka, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    topics = {
        codec: kafka.create_topic("primary", unique_name(f"steady-{codec}"), partitions=PARTITIONS)
        for codec in CODECS
    }
    remotes = {codec: f"primary.{topic}" for codec, topic in topics.items()}
    kafka.created += [("backup", remote) for remote in remotes.values()]
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {
                "enabled": True,
                "topics": list(topics.values()),
                "srm.batch.max.records": 300,
                "srm.copy.batches": False,
            },
            "backup->primary": {"enabled": False},
        },
        replication={"tasks.max": 2},
    )
    driver = DriverProcess(config, tmp_path / "driver.log")
    producers = {
        codec: SteadyProducer(kafka["primary"], topic, PARTITIONS, per_tick=PER_TICK, codec=codec)
        for codec, topic in topics.items()
    }

    def on_target() -> int:
        return sum(
            sum(end_offsets(kafka["backup"], remote).values()) for remote in remotes.values()
        )

    def current_log() -> str:
        return driver.log_text().rpartition(f"--- start {driver.starts}\n")[2]

    def copied_by_this_start() -> int:
        """Records the driver's current process has copied, as its REST API counts them
        (0 until it serves). The target's end offsets would not do: the killed process's
        last writes still land after the kill, so a kill could fall before the new
        process copied anything."""
        current = current_log()
        urls = [
            line.split("REST at ")[1].split(";")[0].strip()
            for line in current.splitlines()
            if "REST at " in line
        ]
        if not urls:
            return 0
        try:
            status = get_json(f"{urls[0]}/v1/flows/primary/backup/status", timeout=3)
        except (OSError, ValueError):
            return 0
        return int(status["copy"]["records"])

    for producer in producers.values():
        producer.start()
    rng = random.Random(20261120)
    kills: list[str] = []
    try:
        for kill in range(KILLS):
            driver.start()
            wait_until(
                lambda: copied_by_this_start() > 0,
                120,
                f"driver start {kill + 1} copies something",
                detail=lambda: driver.log_text()[-3000:],
                step=0.2,
            )
            time.sleep(rng.uniform(0.0, 3.0))
            copied = on_target()
            driver.kill9()
            kills.append(f"kill {kill + 1}: {copied} records on the target")
        for producer in producers.values():
            producer.finish()
        driver.start()
        # Serving: its stop signal is handled from here on (a signal during start-up ends
        # a process unhandled, and a small backlog may be copied before then).
        wait_until(
            lambda: "REST at " in current_log(),
            180,
            "the last driver start serves",
            detail=lambda: driver.log_text()[-3000:],
        )
        for codec, topic in topics.items():
            wait_caught_up(
                kafka["primary"],
                topic,
                kafka["backup"],
                remotes[codec],
                # The backlog of six restarts: waited for as long as it shrinks (a loaded
                # machine copies it slowly), failed once nothing lands for 180 s.
                900,
                stalled_after=180,
                detail=lambda: driver.log_text()[-3000:],
            )
        assert driver.stop() == 0
    finally:
        for producer in producers.values():
            producer.stop.set()
        if driver.alive():
            driver.kill9()

    print(f"\nkill -9 x{len(kills)} ({'; '.join(kills)}), driver starts {driver.starts}:")
    log = driver.log_text()
    for codec, topic in topics.items():
        source = consume_all(kafka["primary"], topic)
        target = consume_all(kafka["backup"], remotes[codec])
        count = count_copy(source, target)
        print(f"  {codec}: {count}")
        assert count.produced == producers[codec].sent, codec
        assert (count.missing, count.duplicated) == (0, 0), codec
        for partition in range(PARTITIONS):
            assert content(target[partition]) == content(source[partition]), (
                f"{codec}: partition {partition}"
            )
        # A kill hit records of this topic that were written but not yet recorded:
        # checked, not re-sent.
        assert any(
            f"primary:{topic}-" in line and "past the recorded position are verified copies" in line
            for line in log.splitlines()
        ), f"{codec}: no kill left records past the recorded position"
        batches = log_batches(kafka["backup"], remotes[codec])
        assert data_codecs(batches, WORTH_COMPRESSING) == {codec}
