"""Kafka clusters for the tests as containers of the locally built ``srm/kafka`` image.

The second backend of the test fixtures (``tests/conftest.py``), next to the local KRaft
processes of :class:`srm_harness.pool.ClusterPool`, with the same face (``bootstrap``,
``stop_all``, ``timings``) plus what only a container can do: be paused, unpaused,
disconnected from a network. Containers are started with the ``testcontainers`` library
(the ``containers`` extra of this package).

Each cluster is reachable two ways, as the image's two listeners allow::

    test process, local drivers ──> 127.0.0.1:<free port> ──(published)──> :9094 EXTERNAL
    containers on the run's network ──> <alias>:9092 ───────────────────> :9092 INTERNAL

The host port is probed free before the container starts and handed to the broker as
``KAFKA_ADVERTISED_EXTERNAL``, so the address a client is sent back in metadata is the
one it dialled; a port taken between the probe and ``docker run`` is retried on a new
one, as the process backend does. The network (``srm-test-<run>``) is made by the pool
and the clusters join it under their alias, so a driver or coordinator in a container
reaches ``primary:9092``.

Nothing is pulled: the image must exist (``make images``). Testcontainers' reaper
container (Ryuk) is switched off for the same reason: it is an image from a registry.
Clean-up is the pool's ``stop_all`` at the end of the session; a run killed before that
leaves containers labelled ``srm.test.run``::

    docker ps -a --filter label=srm.test.run      # what a killed run left
    docker rm -f -v <id>; docker network rm srm-test-<run>

Environment:
    SRM_TEST_KAFKA_IMAGE   the image (default ``srm/kafka:latest``)
    SRM_TEST_KAFKA_HEAP    the brokers' -Xmx (default 512m)
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka.admin import AdminClient

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network

IMAGE = os.environ.get("SRM_TEST_KAFKA_IMAGE", "srm/kafka:latest")
INTERNAL_PORT = 9092  # the image's in-network listener
EXTERNAL_PORT = 9094  # the image's host listener, published on a free loopback port
START_ATTEMPTS = 3
READY_TIMEOUT_S = 90.0


class ContainerStartError(RuntimeError):
    """A Kafka container did not come up; the message carries the end of its log."""


@dataclass(frozen=True)
class Availability:
    """Whether the container backend can run here, and why (not)."""

    usable: bool
    reason: str


def availability(image: str = IMAGE) -> Availability:
    """Can the tests run Kafka in containers: an engine answers and ``image`` exists.

    Cheap when there is no engine (no socket: no import, no connection attempt), so the
    process backend loses no time on machines without Docker."""
    docker_host = os.environ.get("DOCKER_HOST", "")
    if not docker_host and not Path("/var/run/docker.sock").exists():
        return Availability(False, "no Docker engine (no /var/run/docker.sock, no DOCKER_HOST)")
    try:
        import docker
        import testcontainers  # noqa: F401 - the backend needs it; say so here if missing
    except ImportError as exc:
        return Availability(
            False, f"testcontainers is not installed ({exc}): make install (srm-harness needs it)"
        )
    try:
        client = docker.from_env(timeout=5)
    except docker.errors.DockerException as exc:
        return Availability(False, f"no Docker engine answers ({exc})")
    try:
        client.ping()
        version = client.version().get("Version", "?")
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return Availability(False, f"image {image} is missing: build it with `make images`")
    except docker.errors.DockerException as exc:
        return Availability(False, f"no Docker engine answers ({exc})")
    except OSError as exc:  # requests' connection errors when the socket is stale
        return Availability(False, f"no Docker engine answers ({exc})")
    finally:
        client.close()
    return Availability(True, f"{image} on Docker {version}")


def free_port(host: str = "127.0.0.1") -> int:
    """A loopback port free at this moment (the caller retries if it is taken later)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
    return port


@dataclass
class KafkaContainer:
    """One single-node cluster in a container: its alias, host port and container."""

    alias: str
    host_port: int
    container: DockerContainer
    network: Network

    @property
    def bootstrap_servers(self) -> str:
        """For clients on the host (the published EXTERNAL listener)."""
        return f"127.0.0.1:{self.host_port}"

    @property
    def internal_bootstrap(self) -> str:
        """For clients in a container on the run's network (the INTERNAL listener)."""
        return f"{self.alias}:{INTERNAL_PORT}"

    @property
    def id(self) -> str:
        return str(self.container.get_container_id())

    def _wrapped(self) -> Any:
        return self.container.get_wrapped_container()

    def pause(self) -> None:
        """Freeze every process of the container (cgroup freezer): the broker answers no
        one, on the host port or the network, until :meth:`unpause`."""
        self._wrapped().pause()

    def unpause(self) -> None:
        self._wrapped().unpause()

    def disconnect(self) -> None:
        """Leave the run's network (in-network peers lose it; see the module docstring)."""
        self._docker_network().disconnect(self.id)

    def connect(self) -> None:
        self._docker_network().connect(self.id, aliases=[self.alias])

    def _docker_network(self) -> Any:
        client = self.container.get_docker_client().client
        return client.networks.get(self.network.name)

    def status(self) -> str:
        """``running``, ``paused``, ``exited``... as the engine reports it now."""
        wrapped = self._wrapped()
        wrapped.reload()
        return str(wrapped.status)

    def logs(self, chars: int = 3000) -> str:
        out, err = self.container.get_logs()
        return (out + err).decode(errors="replace")[-chars:]

    def stop(self) -> None:
        """Remove the container and its data volume (unpaused first if need be)."""
        try:
            if self.status() == "paused":
                self.unpause()
        except Exception:  # already gone: removing is all that is left
            pass
        self.container.stop(force=True, delete_volume=True)


@dataclass
class ContainerPool:
    """Clusters by alias as containers, started on first use and removed together at the
    end; the face of :class:`srm_harness.pool.ClusterPool`."""

    image: str = IMAGE
    heap: str = field(default_factory=lambda: os.environ.get("SRM_TEST_KAFKA_HEAP", "512m"))
    run: str = field(default_factory=lambda: f"{os.getpid()}-{uuid.uuid4().hex[:6]}")
    started: dict[str, KafkaContainer] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    _network: Network | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def network(self) -> Network:
        """The run's Docker network (made on first use)."""
        if self._network is None:
            from testcontainers.core.network import Network

            self._network = Network(docker_network_kw={"labels": {"srm.test.run": self.run}})
            self._network.name = f"srm-test-{self.run}"
            self._network.create()
        return self._network

    def bootstrap(self, *aliases: str) -> dict[str, str]:
        """Host bootstrap servers per alias, starting (in parallel) those not yet running;
        SRM_TEST_<ALIAS>_BOOTSTRAP still points an alias at an existing cluster."""
        with self._lock:
            missing = [a for a in aliases if a not in self.started and not _external(a)]
            if missing:
                self.started.update(self._start(missing))
        return {a: _external(a) or self.started[a].bootstrap_servers for a in aliases}

    def cluster(self, alias: str) -> KafkaContainer:
        """The container of a started alias (to pause it, disconnect it...)."""
        return self.started[alias]

    def start_private(self, *aliases: str) -> dict[str, KafkaContainer]:
        """Fresh clusters that only the caller uses (and stops): for a test that pauses or
        cuts a cluster, so the session's shared ones are never touched."""
        with self._lock:
            taken = set(self.started)
        clash = taken.intersection(aliases)
        if clash:
            raise ValueError(f"aliases already used by the session's clusters: {sorted(clash)}")
        return self._start(list(aliases), timed=False)

    def _start(self, aliases: list[str], *, timed: bool = True) -> dict[str, KafkaContainer]:
        """Start in parallel; ``timed`` adds the start times to ``timings`` (the session's
        clusters, which the run's summary lists)."""
        began = time.monotonic()
        _ = self.network  # made once, before the threads that join it
        with ThreadPoolExecutor(max_workers=len(aliases)) as executor:
            futures = {a: executor.submit(self._start_one, a) for a in aliases}
        clusters: dict[str, KafkaContainer] = {}
        errors: list[str] = []
        took: dict[str, float] = {}
        for alias, future in futures.items():
            try:
                clusters[alias], took[alias] = future.result()
            except Exception as exc:  # every failure is reported together
                errors.append(f"{alias}: {exc}")
        if errors:
            for cluster in clusters.values():
                cluster.stop()
            raise ContainerStartError("\n".join(errors))
        if timed:
            self.timings.update(took)
            self.timings["+".join(aliases)] = time.monotonic() - began
        return clusters

    def _start_one(self, alias: str) -> tuple[KafkaContainer, float]:
        """Start ``alias`` and wait until it serves metadata on its host port."""
        from docker.errors import APIError
        from testcontainers.core.config import testcontainers_config
        from testcontainers.core.container import DockerContainer

        testcontainers_config.ryuk_disabled = True  # its image is not here to run
        for attempt in range(1, START_ATTEMPTS + 1):
            began = time.monotonic()
            port = free_port()
            container = (
                DockerContainer(self.image)
                .with_name(f"srm-test-{self.run}-{alias}")
                .with_network(self.network)
                .with_network_aliases(alias)
                .with_envs(
                    KAFKA_ADVERTISED_INTERNAL=f"{alias}:{INTERNAL_PORT}",
                    KAFKA_ADVERTISED_EXTERNAL=f"127.0.0.1:{port}",
                    KAFKA_HEAP=self.heap,
                )
                .with_kwargs(hostname=alias, labels={"srm.test.run": self.run, "srm.alias": alias})
            )
            # Published on loopback only (with_bind_ports would bind every interface).
            container.ports[f"{EXTERNAL_PORT}/tcp"] = ("127.0.0.1", port)
            cluster = KafkaContainer(alias, port, container, self.network)
            try:
                container.start()
            except APIError as exc:
                _remove_quietly(container)
                # "port is already allocated" / "address already in use": another process
                # took the probed port; anything else is not ours to retry.
                if attempt < START_ATTEMPTS and "already" in str(exc):
                    continue
                raise ContainerStartError(f"docker could not start {alias}: {exc}") from exc
            try:
                _wait_ready(cluster, READY_TIMEOUT_S)
            except ContainerStartError:
                cluster.stop()
                raise
            return cluster, time.monotonic() - began
        raise AssertionError("unreachable")  # pragma: no cover

    def stop_all(self) -> None:
        """Remove every started container and the run's network."""
        for cluster in self.started.values():
            try:
                cluster.stop()
            except Exception:  # remove the others and the network anyway
                pass
        self.started.clear()
        if self._network is not None:
            try:
                self._network.remove()
            except Exception:  # a private cluster still attached: said below
                pass
            self._network = None


def _wait_ready(cluster: KafkaContainer, timeout: float) -> None:
    """Metadata through the host port names the broker at the advertised host address."""
    deadline = time.monotonic() + timeout
    # log_level 3: no line per refused connection while the broker boots.
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3})
    while time.monotonic() < deadline:
        if cluster.status() == "exited":
            raise ContainerStartError(f"{cluster.alias} exited:\n{cluster.logs()}")
        try:
            metadata = client.list_topics(timeout=2)
            brokers = {f"{b.host}:{b.port}" for b in metadata.brokers.values()}
            if brokers == {cluster.bootstrap_servers}:
                return
        except Exception:  # KafkaException while the broker boots
            pass
        time.sleep(0.3)
    raise ContainerStartError(
        f"{cluster.alias} not ready within {timeout:.0f} s:\n{cluster.logs()}"
    )


def _remove_quietly(container: DockerContainer) -> None:
    try:
        container.stop(force=True, delete_volume=True)
    except Exception:  # nothing was created
        pass


def _external(alias: str, environ: Mapping[str, str] = os.environ) -> str | None:
    return environ.get(f"SRM_TEST_{alias.upper()}_BOOTSTRAP") or None
