"""Session fixtures for suites that need real Kafka clusters and a real Spark.

Clusters ``primary`` and ``backup`` start once per test run on free loopback ports
(``dr`` too, when a test asks for it), on one of two backends, chosen when the first test
asks for a cluster (a run of unit tests never looks):

- ``containers``: the locally built ``srm/kafka`` image, started with testcontainers
  (:mod:`srm_harness.containers`), also reachable on a Docker network of the run's own;
- ``processes``: local KRaft processes (:class:`srm_harness.pool.ClusterPool`).

SRM_TEST_BACKEND=containers or =processes chooses; unset, containers run when a Docker
engine answers and the image exists, local processes otherwise (no engine: no cost, the
check is whether a socket exists). The run's summary says which backend ran and why.
SRM_TEST_<ALIAS>_BOOTSTRAP points an alias at an existing cluster on either backend. Each
test gets unique topic and group names, and the topics it made are deleted afterwards.

``kafka_secured`` gives ``primary`` and ``backup`` secured (SASL_SSL with SCRAM, mutual
TLS, StandardAuthorizer), always as local processes (:mod:`srm_harness.secured` over
:mod:`srm_local.secured`, whose docstrings list what each cluster offers), started the
first time a test asks.
"""

from __future__ import annotations

import atexit
import gc
import os
import re
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest
from srm_harness.clients import create_topic, delete_topics
from srm_harness.pool import ClusterPool
from srm_harness.processes import http_environment
from srm_harness.processes import http_tokens as write_http_tokens
from srm_local.http_tokens import HttpTokens

if TYPE_CHECKING:
    from srm_harness.containers import ContainerPool
    from srm_harness.secured import SecuredPool, SecuredTestCluster

BACKENDS = ("containers", "processes")


@dataclass
class Backend:
    """The session's choice: which pool starts clusters, and why that one."""

    name: str
    reason: str
    pool: ClusterPool | ContainerPool | None = None
    unusable: str = ""  # set when the backend asked for cannot run here


_BACKEND: Backend | None = None


def _backend() -> Backend:
    """Chosen once, on first use (see the module docstring)."""
    global _BACKEND
    if _BACKEND is None:
        _BACKEND = _choose(os.environ.get("SRM_TEST_BACKEND", "").strip().lower())
    return _BACKEND


def _choose(asked: str) -> Backend:
    if asked not in ("", "auto", *BACKENDS):
        raise pytest.UsageError(f"SRM_TEST_BACKEND={asked!r}: use one of {', '.join(BACKENDS)}")
    if asked == "processes":
        return Backend("processes", "SRM_TEST_BACKEND=processes", ClusterPool())
    from srm_harness.containers import ContainerPool, availability

    found = availability()
    if found.usable:
        why = "SRM_TEST_BACKEND=containers" if asked == "containers" else "chosen automatically"
        return Backend("containers", f"{found.reason}, {why}", ContainerPool())
    if asked == "containers":
        return Backend("containers", "SRM_TEST_BACKEND=containers", None, found.reason)
    return Backend("processes", found.reason, ClusterPool())


def pytest_unconfigure(config: pytest.Config) -> None:
    """Clusters stop after the run's summary is printed, so the summary is the run's last
    word: a client some code left open logs every failed reconnect to stderr from
    librdkafka's own threads once its cluster is gone, and thousands of such lines used to
    follow the summary and push it out of CI's tail. Producers held only by reference
    cycles are destroyed first, while their brokers still answer; what the rest print
    from here on goes to a file in the run folder."""
    if _BACKEND is None and _SECURED is None:
        return
    gc.collect()
    exit_log = config.rootpath / ".run" / f"pytest-exit-{os.getpid()}.log"
    exit_log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    sink = os.open(exit_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(sink, 2)
    # pytest's capture puts the terminal back on fd 2 after the last hook: again at exit.
    atexit.register(os.dup2, sink, 2)
    print(f"clusters stopping; clients still open log to {exit_log}", flush=True)
    if _BACKEND is not None and _BACKEND.pool is not None:
        _BACKEND.pool.stop_all()
    if _SECURED is not None:
        _SECURED.stop_all()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _BACKEND is None:
        return  # no test asked for a cluster
    if _BACKEND.unusable:
        terminalreporter.write_line(
            f"Kafka test backend: containers asked for, not usable: {_BACKEND.unusable}"
        )
        return
    terminalreporter.write_line(f"Kafka test backend: {_BACKEND.name} ({_BACKEND.reason})")
    assert _BACKEND.pool is not None
    if _BACKEND.pool.timings:
        timings = _BACKEND.pool.timings.items()
        parts = ", ".join(f"{alias} {seconds:.1f} s" for alias, seconds in timings)
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
        create_topic(self[alias], name, partitions=partitions, config=config)
        self.created.append((alias, name))
        return name


def _start(*aliases: str) -> dict[str, str]:
    backend = _backend()
    try:
        if backend.pool is None:
            raise RuntimeError(f"the container backend cannot run here: {backend.unusable}")
        return backend.pool.bootstrap(*aliases)
    except Exception as exc:  # noqa: BLE001 - turned into a skip or a failure below
        if os.environ.get("SRM_REQUIRE_KAFKA") == "1":
            raise
        pytest.skip(f"Kafka clusters could not be started ({backend.name}): {exc}")


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


@pytest.fixture
def kafka_mixed(kafka: Clusters) -> Iterator[Callable[[str, str], Clusters]]:
    """``kafka_mixed("kafka-3.9", "source")``: ``primary`` and ``backup`` where one is an
    older single-node cluster (``srm_harness.pool.OLDER_KAFKA``: started the first time a
    test asks, then shared by the session) and the other the session's 4.1 cluster;
    ``role`` says which one the older cluster plays. Topics a test creates through it are
    deleted after the test."""
    made: list[Clusters] = []

    def mixed(older: str, role: str) -> Clusters:
        old = _start(older)[older]
        pair = {"primary": old, "backup": kafka["backup"]}
        if role == "target":
            pair = {"primary": kafka["primary"], "backup": old}
        made.append(Clusters(pair))
        return made[-1]

    yield mixed
    for clusters in made:
        _clean_up(clusters)


_SECURED: SecuredPool | None = None


@dataclass
class SecuredClusters:
    """Secured clusters by alias (:class:`srm_harness.secured.SecuredTestCluster`), plus topic
    bookkeeping for clean-up."""

    clusters: dict[str, SecuredTestCluster]
    created: list[tuple[str, str]] = field(default_factory=list)

    def __getitem__(self, alias: str) -> SecuredTestCluster:
        return self.clusters[alias]

    def create_topic(
        self, alias: str, name: str, *, partitions: int = 1, config: Mapping[str, str] | None = None
    ) -> str:
        self[alias].create_topic(name, partitions=partitions, config=config)
        self.created.append((alias, name))
        return name


@pytest.fixture
def kafka_secured() -> Iterator[SecuredClusters]:
    """``primary`` and ``backup`` with SASL_SSL (SCRAM-SHA-512/256, PLAIN), mutual TLS and
    StandardAuthorizer, as local processes on any backend (started once per session)."""
    global _SECURED
    from srm_harness.secured import SecuredPool
    from srm_local.paths import run_dir

    if _SECURED is None:
        _SECURED = SecuredPool(run_dir() / f"test-{os.getpid()}" / "secured")
    try:
        clusters = SecuredClusters(_SECURED.start("primary", "backup"))
    except Exception as exc:  # noqa: BLE001 - turned into a skip or a failure below
        if os.environ.get("SRM_REQUIRE_KAFKA") == "1":
            raise
        pytest.skip(f"secured Kafka clusters could not be started: {exc}")
    yield clusters
    for alias, name in clusters.created:
        delete_topics(
            clusters[alias].bootstrap_servers, [name], client=clusters[alias].client_config()
        )


@pytest.fixture
def kafka_containers() -> ContainerPool:
    """The container backend's pool, for tests that pause or cut a cluster off (with
    ``start_private``, never the shared clusters); skips on the process backend, even
    with SRM_REQUIRE_KAFKA=1: machines without a Docker engine (CI) cannot run them."""
    backend = _backend()
    if backend.name != "containers" or backend.pool is None:
        why = backend.unusable or backend.reason
        pytest.skip(f"needs the container backend (Kafka in containers), not available: {why}")
    from srm_harness.containers import ContainerPool

    assert isinstance(backend.pool, ContainerPool)
    return backend.pool


def _clean_up(clusters: Clusters) -> None:
    by_alias: dict[str, list[str]] = {}
    for alias, name in clusters.created:
        by_alias.setdefault(alias, []).append(name)
    for alias, names in by_alias.items():
        delete_topics(clusters[alias], names)


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``unique_name("orders")`` -> ``orders-<test>-<random>``: names no other test uses."""
    slug = re.sub(r"[^a-zA-Z0-9]+", "-", request.node.name)[:40].strip("-").lower()
    token = uuid.uuid4().hex[:8]
    return lambda base: f"{base}-{slug}-{token}"


@pytest.fixture(scope="session", autouse=True)
def http_tokens(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpTokens]:
    """The run's HTTP tokens: every coordinator, driver and gateway a test starts reads
    the tokens file, srm-control bears its token, a driver process its own
    (:func:`srm_harness.processes.http_environment`); the environment is restored after."""
    tokens = write_http_tokens(tmp_path_factory.mktemp("http-tokens"))
    saved = {name: os.environ.get(name) for name in http_environment(tokens)}
    os.environ.update(http_environment(tokens))
    yield tokens
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """A local[2] SparkSession as the driver starts it, plus Spark's Kafka connector (which
    only test_spark_kafka_connector.py uses, to show why the driver does not)."""
    from srm_driver.spark import spark_session, stop_session
    from srm_local.jars import spark_connector_jars

    session = spark_session(
        "local[2]",
        jars=spark_connector_jars(),
        app_name="srm-tests",
        conf={"spark.driver.memory": "1g"},
    )
    session.sparkContext.setLogLevel("WARN")
    yield session
    # The JVM outlives stop() and cached Kafka producers keep dialling the clusters after
    # they are gone; stop_session ends the JVM with the session.
    stop_session(session)
