"""Session fixtures for suites that need real Kafka clusters and a real Spark.

Clusters ``primary`` and ``backup`` start once per test run as local KRaft processes on
free loopback ports (``dr`` too, when a test asks for it); SRM_TEST_<ALIAS>_BOOTSTRAP
points the suite at an existing cluster instead. Each test gets unique topic and group
names, and the topics it made are deleted afterwards.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import pytest
from srm_local import testing
from srm_local.testing import ClusterPool

_POOL = ClusterPool()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _POOL.stop_all()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _POOL.timings:
        parts = ", ".join(f"{alias} {seconds:.1f} s" for alias, seconds in _POOL.timings.items())
        terminalreporter.write_line(f"Kafka clusters started by the fixture: {parts}")


@dataclass
class Clusters:
    """Bootstrap servers by alias, plus topic bookkeeping for clean-up."""

    bootstrap: dict[str, str]
    created: list[tuple[str, str]] = field(default_factory=list)

    def __getitem__(self, alias: str) -> str:
        return self.bootstrap[alias]

    def create_topic(
        self,
        alias: str,
        name: str,
        *,
        partitions: int = 1,
        config: Mapping[str, str] | None = None,
    ) -> str:
        testing.create_topic(self[alias], name, partitions=partitions, config=config)
        self.created.append((alias, name))
        return name


def _start(*aliases: str) -> dict[str, str]:
    try:
        return _POOL.bootstrap(*aliases)
    except Exception as exc:  # noqa: BLE001 - turned into a skip or a failure below
        if os.environ.get("SRM_REQUIRE_KAFKA") == "1":
            raise
        pytest.skip(f"Kafka clusters could not be started: {exc}")


@pytest.fixture
def kafka() -> Iterator[Clusters]:
    """Real clusters ``primary`` and ``backup`` (started once per session)."""
    clusters = Clusters(_start("primary", "backup"))
    yield clusters
    _clean_up(clusters)


@pytest.fixture
def kafka3() -> Iterator[Clusters]:
    """``primary``, ``backup`` and ``dr``; ``dr`` starts the first time a test asks."""
    clusters = Clusters(_start("primary", "backup", "dr"))
    yield clusters
    _clean_up(clusters)


def _clean_up(clusters: Clusters) -> None:
    by_alias: dict[str, list[str]] = {}
    for alias, name in clusters.created:
        by_alias.setdefault(alias, []).append(name)
    for alias, names in by_alias.items():
        testing.delete_topics(clusters[alias], names)


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``unique_name("orders")`` -> ``orders-<test>-<random>``: names no other test uses."""
    slug = re.sub(r"[^a-zA-Z0-9]+", "-", request.node.name)[:40].strip("-").lower()
    token = uuid.uuid4().hex[:8]
    return lambda base: f"{base}-{slug}-{token}"


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """A local[2] SparkSession with the driver's jars (Kafka clients, our copier) and Spark's
    Kafka connector (which only test_spark_kafka_connector.py uses, to show why the driver
    does not)."""
    from srm_driver.spark import driver_jars, spark_session, stop_session
    from srm_local.jars import driver_jars_dir, spark_connector_jars

    # Both folders hold the same kafka-clients jar; Spark refuses a second jar of a name.
    ours = driver_jars(str(driver_jars_dir()))
    names = {jar.name for jar in ours}
    session = spark_session(
        "local[2]",
        jars=[*ours, *(jar for jar in spark_connector_jars() if jar.name not in names)],
        app_name="srm-tests",
        conf={"spark.driver.memory": "1g"},
    )
    session.sparkContext.setLogLevel("WARN")
    yield session
    # The JVM outlives stop() and cached Kafka producers keep dialling the clusters after
    # they are gone; stop_session ends the JVM with the session.
    stop_session(session)
