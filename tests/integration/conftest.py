"""A standalone driver inside the test process, on the session's Spark: built by the
driver's own composition root (``srm_driver.bootstrap.build``), so everything but the
process boundary is what ``srm-driver --standalone`` runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from srm_common.config import load_config
from srm_harness.spark_standalone import SparkStandalone


class InProcessDriver:
    """``start()``, wait for what a test needs, ``stop()`` (graceful, as SIGTERM)."""

    def __init__(self, config_path: Path, session, *, driver_id: str = "test-driver") -> None:  # type: ignore[no-untyped-def]
        from srm_driver.bootstrap import build
        from srm_driver.settings import driver_settings

        settings = driver_settings(
            load_config(config_path),
            spark_master=str(session.sparkContext.master),
            spark_conf={},
            host="127.0.0.1",
            port=0,
            driver_id=driver_id,
            standalone=True,
        )
        self.driver = build(settings, session=session)
        self._thread = threading.Thread(target=self.driver.run, name="test driver", daemon=True)

    @property
    def url(self) -> str:
        return self.driver.url

    def start(self) -> InProcessDriver:
        """Start it and wait until its REST API answers."""
        self._thread.start()
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/v1/driver", timeout=2):
                    return self
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self, timeout: float = 120) -> None:
        assert self.driver.runtime is not None
        self.driver.runtime.stop.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the driver did not stop within its grace period"

    def status(self, flow: str = "primary->backup") -> dict:  # type: ignore[type-arg]
        """The flow's REST status, as an operator reads it."""
        source, target = flow.split("->")
        with urllib.request.urlopen(
            f"{self.url}/v1/flows/{source}/{target}/status", timeout=10
        ) as r:
            return json.loads(r.read())


@pytest.fixture
def run_driver(spark, tmp_path) -> Iterator[Callable[[Path], InProcessDriver]]:  # type: ignore[no-untyped-def]
    """Start in-process standalone drivers on the session's Spark; all stopped at the end."""
    started: list[InProcessDriver] = []

    def start(config_path: Path) -> InProcessDriver:
        driver = InProcessDriver(config_path, spark).start()
        started.append(driver)
        return driver

    yield start
    for driver in started:
        if driver._thread.is_alive():  # noqa: SLF001 - the fixture owns it
            driver.stop()


# -- a Spark standalone cluster, shared ---------------------------------------------------


@pytest.fixture(scope="session")
def _spark_standalone() -> Iterator[list[SparkStandalone]]:
    """The session's standalone cluster, once a test asked for one (see ``spark_cluster``)."""
    held: list[SparkStandalone] = []
    yield held
    for cluster in held:
        cluster.stop()


@pytest.fixture
def spark_cluster(
    _spark_standalone: list[SparkStandalone], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SparkStandalone]:
    """A Spark standalone master and two 1-core workers from the PySpark install, shared
    by the tests that ask (a start is seconds of three JVMs): a test reads only the
    executor logs of its own applications, and a test that killed or added a worker
    leaves it to be stopped, so the next one gets a cluster as ``start()`` made it."""
    held = _spark_standalone
    if not held:
        folder = tmp_path_factory.mktemp("spark")
        held.append(SparkStandalone(folder, workers=2, cores=1).start())
    cluster = held[0]
    cluster.forget_earlier_apps()
    yield cluster
    if not cluster.untouched():
        held.clear()
        cluster.stop()


# -- MM2's own Java classes, run next to ours --------------------------------------------

REPO = Path(__file__).resolve().parents[2]
JAVA_CLIENT = Path(__file__).parent / "java" / "MirrorClientInterop.java"
TOOLS_LOG4J = REPO / "deploy" / "local" / "log4j2-tools.properties"

JavaAnswers = dict[str, object]
JavaClient = Callable[[dict[str, object]], JavaAnswers]


def unavailable(reason: str) -> NoReturn:
    """Skip (or fail with SRM_REQUIRE_KAFKA=1) when Java or the jars are missing."""
    if os.environ.get("SRM_REQUIRE_KAFKA") == "1":
        pytest.fail(f"{reason} (SRM_REQUIRE_KAFKA=1)")
    pytest.skip(reason)


def kafka_jars() -> Path:
    """The Kafka jars folder (SRM_KAFKA_JARS_DIR overrides the fetched one)."""
    override = os.environ.get("SRM_KAFKA_JARS_DIR")
    if override:
        return Path(override)
    try:
        from srm_local.jars import kafka_jars_dir
    except ImportError as exc:
        unavailable(f"srm_local.jars is not importable ({exc}); set SRM_KAFKA_JARS_DIR")
    try:
        return kafka_jars_dir()
    except RuntimeError as exc:  # JarFetchError: Maven missing or offline
        unavailable(f"Kafka jars unavailable: {exc}")


def java_or_skip() -> str:
    java = shutil.which("java")
    if java is None:
        unavailable("no java on the PATH")
    return java


@pytest.fixture(scope="session")
def java_and_jars() -> tuple[str, Path]:
    """The java command and the Kafka jars folder; the test skips without them."""
    return java_or_skip(), kafka_jars()


@pytest.fixture(scope="session")
def java_client(tmp_path_factory: pytest.TempPathFactory) -> JavaClient:
    """Runs MirrorClientInterop.java (MM2's MirrorClient and RemoteClusterUtils) on a
    request; its answers as JSON."""
    java = java_or_skip()
    jars = kafka_jars()
    if not any(jars.glob("connect-mirror-client-*.jar")):
        unavailable(f"{jars} holds no connect-mirror-client jar")
    folder = tmp_path_factory.mktemp("mirror-client-java")

    def run(request: dict[str, object]) -> JavaAnswers:
        stem = uuid.uuid4().hex[:8]
        asked, answered = folder / f"{stem}.request.json", folder / f"{stem}.out.json"
        asked.write_text(json.dumps(request), encoding="utf-8")
        command = [
            java,
            f"-Dlog4j2.configurationFile={TOOLS_LOG4J}",
            "-cp",
            f"{jars}/*",
            str(JAVA_CLIENT),
            str(asked),
            str(answered),
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, f"MM2's Java client failed ({done.returncode}):\n{done.stderr}"
        answers: JavaAnswers = json.loads(answered.read_text(encoding="utf-8"))
        return answers

    return run


# -- a network cut for the process backend ---------------------------------------------


class TcpProxy:
    """A TCP forwarder from ``port`` to ``target`` on loopback that a test can cut: the
    way to cut a local cluster off the network with the process backend (CI's), where
    ``docker network disconnect`` is not available. A broker advertises the proxy's port,
    so every client of it (drivers, coordinators, the gateway, producers) goes through.

    ``cut()`` acts as a network that drops packets: nothing more passes either way,
    existing connections stall (what is read is dropped), new ones are accepted and
    stall too, so clients see timeouts rather than refusals (the harder fault, as in a
    partition, or ``docker pause``). ``heal()`` closes every stalled connection (their
    streams are broken) and forwards again: clients reconnect. ``refuse()`` closes the
    proxy's port, as a dead broker's port is closed (for a broker killed behind it: a
    proxy that accepted and at once closed would show clients a broker that breaks
    every handshake, which no real failure does); ``listen()`` opens it again."""

    def __init__(self, target: int) -> None:
        import socket
        import threading

        self.target = target
        self._listener: socket.socket | None = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.cut_off = threading.Event()
        self._stop = threading.Event()
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)
        self._thread.start()

    def cut(self) -> None:
        self.cut_off.set()

    def heal(self) -> None:
        with self._lock:
            stalled, self._sockets = self._sockets, set()
        for sock in stalled:
            _close_quietly(sock)
        self.cut_off.clear()

    def refuse(self) -> None:
        """Close the port (connections are refused) and every connection through it."""
        self._open.clear()
        listener, self._listener = self._listener, None
        if listener is not None:
            _close_quietly(listener)
        self.heal()  # the accept loop, woken by the shutdown, waits for listen()

    def listen(self) -> None:
        """Open the port again (the same one: clients know only it)."""
        import socket

        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._open.set()

    def close(self) -> None:
        self._stop.set()
        self._open.set()
        if self._listener is not None:
            _close_quietly(self._listener)
        self.heal()

    def _accept(self) -> None:
        import socket
        import threading

        while not self._stop.is_set():
            self._open.wait()
            listener = self._listener
            if listener is None:
                continue
            try:
                client, _ = listener.accept()
            except OSError:
                if self._open.is_set() and listener is self._listener:
                    return  # closed for good
                continue
            try:
                upstream = (
                    None
                    if self.cut_off.is_set()
                    else socket.create_connection(("127.0.0.1", self.target), timeout=5)
                )
                if upstream is not None:
                    upstream.settimeout(None)  # idle Kafka connections are normal
            except OSError:
                _close_quietly(client)
                continue
            with self._lock:
                self._sockets.add(client)
                if upstream is not None:
                    self._sockets.add(upstream)
            if upstream is None:
                threading.Thread(target=self._drain, args=(client,), daemon=True).start()
                continue
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source, sink) -> None:  # type: ignore[no-untyped-def]
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if not self.cut_off.is_set():
                    sink.sendall(data)
        except OSError:
            pass
        _close_quietly(source)
        _close_quietly(sink)

    def _drain(self, sock) -> None:  # type: ignore[no-untyped-def]
        try:
            while sock.recv(65536):
                pass
        except OSError:
            pass
        _close_quietly(sock)


def _close_quietly(sock) -> None:  # type: ignore[no-untyped-def]
    import socket

    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


@pytest.fixture
def tcp_proxy() -> Iterator[Callable[[int], TcpProxy]]:
    """``tcp_proxy(port)``: a :class:`TcpProxy` to ``port``; all closed at the end."""
    proxies: list[TcpProxy] = []

    def start(port: int) -> TcpProxy:
        proxy = TcpProxy(port)
        proxies.append(proxy)
        return proxy

    yield start
    for proxy in proxies:
        proxy.close()
