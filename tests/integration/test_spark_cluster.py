"""The copy on a Spark standalone cluster: a master and two workers started from the
PySpark install, the driver a separate process with ``--spark-master spark://...``, so the
copy slots run in the workers' Python processes, not in the driver. Full content
comparison. The workers run the driver's own Python environment (PYSPARK_PYTHON: the same
path on every machine, as the driver image gives; docs/scaling.md).

The slots report to the driver over plain HTTP here; test_spark_workers runs the same
cluster with the driver listening on HTTPS (a certificate of a private CA the executors
do not trust, handed to them with the job) through an executor's loss and an added one."""

from __future__ import annotations

import pytest
from srm_harness.clients import consume_all, produce
from srm_harness.compare import content, copied
from srm_harness.control import write_config
from srm_harness.processes import DriverProcess
from srm_harness.records import RECENT_MS, Record
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_the_copy_slots_run_on_the_workers_and_report_over_http(
    kafka, spark_cluster, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    topic = kafka.create_topic(
        "primary", unique_name("cluster"), partitions=4, config={"retention.ms": "-1"}
    )
    remote = f"primary.{topic}"
    records = [
        Record(f"k{i}".encode(), f"value {i}".encode() * 20, (("n", str(i).encode()),),
               RECENT_MS + i, i % 4)
        for i in range(4000)
    ]  # fmt: skip
    produce(kafka["primary"], topic, records)
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={"primary->backup": {"enabled": True, "topics": [topic]}},
    )
    driver = DriverProcess(config, tmp_path / "driver.log", spark_master=spark_cluster.master_url)
    driver.start()
    try:
        wait_until(
            lambda: copied(kafka["primary"], topic, kafka["backup"], remote),
            180,
            "copied through the cluster's executors",
            detail=lambda: driver.log_text()[-3000:],
        )
        # More records while it runs: the slots keep copying.
        late = [Record(b"late", b"x", (), None, i % 4) for i in range(400)]
        produce(kafka["primary"], topic, late)
        wait_until(
            lambda: copied(kafka["primary"], topic, kafka["backup"], remote),
            60,
            "the late records copied",
        )
    finally:
        assert driver.stop() == 0, driver.log_text()[-3000:]
    source = consume_all(kafka["primary"], topic)
    target = consume_all(kafka["backup"], remote)
    for partition in range(4):
        assert content(target[partition]) == content(source[partition])
    assert sum(len(v) for v in target.values()) == len(records) + len(late)
    executors = spark_cluster.executor_logs()
    started = {line.split("copy slot ")[1].split()[0] for line in executors.splitlines()
               if "copy slot" in line and "started" in line}  # fmt: skip
    assert started == {"0", "1"}, "both slots ran in the workers' executors"
    assert "copy slot 0 of job" not in driver.log_text(), "no slot ran in the driver's process"
    assert "standalone driver at http://127.0.0.1:" in driver.log_text()
    total = len(records) + len(late)
    print(f"\nstandalone cluster: {total} records copied, slots {started}")
