"""SRM's services as child processes of a test (drivers, coordinators, the gateway), each in
its own process group and with its own log, and the HTTP tokens they share."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from srm_local.http_tokens import HttpTokens, write_tokens

from srm_harness.spark_archive import driver_archive_options


class ChildProcess:
    """``python -m MODULE ARGS`` as a child in its own process group (a driver's Spark JVM
    included), so a test can kill -9 the whole service as a crashed container would die."""

    def __init__(
        self,
        module: str,
        args: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.module = module
        self.args = list(args)
        self.log_path = log_path
        self.env = dict(env or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        log = self.log_path.open("ab")
        log.write(f"--- start {self.starts + 1}\n".encode())
        log.flush()
        self.process = subprocess.Popen(
            [sys.executable, "-m", self.module, *self.args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **self.env},
        )
        log.close()
        self.starts += 1

    def kill9(self) -> None:
        """SIGKILL to the driver and its JVM, no warning, as a crash would."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def stop(self, timeout: float = 120) -> int:
        """SIGTERM and wait: running batches finish and are recorded; the exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            # To the driver only, as `docker stop` does; Spark's JVM is its child.
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        finally:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # stragglers of the group
            except ProcessLookupError:
                pass
        return code

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


TEST_DRIVER_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
"""The Spark JVM of every driver a test starts compiles with C1 only. A driver's JVM
schedules the copy slots and answers Py4J; the copying is Python. Starting it is most of
a driver process's start, and the C2 compiler's work at start-up never pays off in a
test: measured with one local[1] session on this 2-core machine (loaded), 25-39 s ->
14-22 s to a session and 15.5-20.8 -> 10.7-12.3 CPU s (docs/testing.md, "Where the time
goes"). Drivers started by `make up` or an operator keep the JVM's defaults."""


class DriverProcess(ChildProcess):
    """``srm-driver --config FILE`` (``--standalone`` unless ``args`` say otherwise), its
    Spark JVM with :data:`TEST_DRIVER_JVM_OPTIONS` and, once ``make test`` has built it,
    the class-data archive of :mod:`srm_harness.spark_archive`."""

    def __init__(
        self,
        config: Path,
        log_path: Path,
        *,
        spark_master: str = "local[2]",
        args: Sequence[str] = ("--standalone",),
    ) -> None:
        super().__init__(
            "srm_driver",
            [
                "--config",
                str(config),
                "--spark-master",
                spark_master,
                "--spark-conf",
                "spark.driver.extraJavaOptions="
                + " ".join((TEST_DRIVER_JVM_OPTIONS, *driver_archive_options())),
                *args,
            ],
            log_path,
            env=driver_http_environment(),
        )
        self.config = config


HTTP_PRINCIPALS = ("srm-control", "driver:test", "api-gateway")


def http_tokens(folder: Path) -> HttpTokens:
    """Tokens of the test run's HTTP principals (srm-control, ``driver:test``,
    api-gateway) in ``folder``; :func:`http_environment` hands them to the services."""
    return write_tokens(folder, HTTP_PRINCIPALS)


def http_environment(tokens: HttpTokens) -> dict[str, str]:
    """What every service and srm-control of a test reads: the tokens file, and the
    token srm-control bears (a driver's is set by :class:`DriverProcess`)."""
    return {
        "SRM_HTTP_TOKENS_FILE": str(tokens.tokens_file),
        "SRM_TOKEN_FILE": str(tokens.token_file("srm-control")),
    }


def driver_http_environment() -> dict[str, str]:
    """A driver's token beside the srm-control token of :func:`http_environment`."""
    tokens = os.environ.get("SRM_HTTP_TOKENS_FILE")
    if not tokens:
        return {}
    driver = Path(tokens).with_name("driver-test.token")
    return {"SRM_TOKEN_FILE": str(driver)} if driver.is_file() else {}


def log_tails(
    processes: Iterable[ChildProcess] | Callable[[], Iterable[ChildProcess]], chars: int = 2500
) -> Callable[[], str]:
    """A ``detail=`` for :func:`wait_until`: the end of each process's log, named (a
    callable ``processes`` is asked each time, for groups that change)."""

    def tails() -> str:
        current = processes() if callable(processes) else processes
        return "\n".join(
            f"--- {p.log_path.name}\n{p.log_text()[-chars:]}"
            for p in current
            if p.log_path.exists()
        )

    return tails


class CoordinatorProcess(ChildProcess):
    """``srm-coordinator --config FILE --id ID``; its log memory beside its log file unless
    ``args`` say otherwise (never in the working directory, shared by every test)."""

    def __init__(self, config: Path, log_path: Path, coordinator_id: str, *args: str) -> None:
        if "--state-file" not in args:
            args = ("--state-file", str(log_path.with_name(f"{coordinator_id}-log.json")), *args)
        super().__init__(
            "srm_coordinator", ["--config", str(config), "--id", coordinator_id, *args], log_path
        )
        self.id = coordinator_id


class GatewayProcess(ChildProcess):
    """``srm-api-gateway --config FILE --port 0 --db-url URL``; :meth:`url` once it serves."""

    def __init__(self, config: Path, log_path: Path, db_url: str, *args: str) -> None:
        super().__init__(
            "srm_api_gateway",
            ["--config", str(config), "--port", "0", "--db-url", db_url, *args],
            log_path,
        )

    def url(self) -> str | None:
        """Where the latest start serves, or None before it says."""
        text = self.log_text().split(f"--- start {self.starts}\n")[-1]
        said = "srm-api-gateway: API at "
        if said not in text:
            return None
        return text.split(said)[-1].split()[0]
