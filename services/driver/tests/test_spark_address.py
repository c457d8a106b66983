"""Where Spark's driver listens: executors on a Spark cluster must be able to reach it."""

from __future__ import annotations

import pytest
from srm_driver.spark import driver_address_defaults


@pytest.mark.parametrize("master", ["local", "local[*]", "local[2]", "local[2,1]"])
def test_local_mode_listens_on_loopback(master: str) -> None:
    # The executors are threads of the driver's JVM: nothing else needs to reach it.
    assert driver_address_defaults(master) == {"SPARK_LOCAL_IP": "127.0.0.1"}


@pytest.mark.parametrize(
    "master",
    ["spark://spark-master:7077", "spark://127.0.0.1:7077", "k8s://https://api:6443", "yarn"],
)
def test_a_cluster_master_leaves_the_address_to_spark(master: str) -> None:
    # Loopback here would tell executors in other containers or pods to connect to
    # themselves: the copy job's tasks would never start.
    assert driver_address_defaults(master) == {}
