"""SRM services as local processes for `make up`: started, watched, restarted, stopped.

Each runs as ``python -m <module>`` from this environment in its own process group (so
Ctrl-C in the terminal reaches only the stack, which then stops it in order), under
:mod:`srm_local.guard` (it cannot outlive the launcher), and logs to
``.run/services/<name>.log``. ``.run/services/<name>.pid`` records its process group and
HTTP port while it runs, for ``make down`` (:mod:`srm_local.stopping`).

Stop bounds: a service exits within :data:`~srm_common.shutdown.SERVICE_STOP_SECONDS` of
SIGTERM (drivers :data:`~srm_common.shutdown.DRIVER_STOP_SECONDS`) by itself; the
launcher waits :data:`STOP_MARGIN_SECONDS` more, then SIGKILLs the process group.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from srm_common.shutdown import DRIVER_STOP_SECONDS, SERVICE_STOP_SECONDS

from srm_local.guard import guarded
from srm_local.paths import run_dir

STOP_MARGIN_SECONDS = 5


def services_dir() -> Path:
    return run_dir() / "services"


class ServiceProcess:
    """One service: its command line, its log, its process."""

    def __init__(
        self, name: str, module: str, args: Sequence[str], env: Mapping[str, str] | None = None
    ) -> None:
        self.name = name
        self.command = [sys.executable, "-m", module, *args]
        self.env = {**os.environ, **(env or {})}
        self.log_path = services_dir() / f"{name}.log"
        self.pid_path = services_dir() / f"{name}.pid"
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def port(self) -> int | None:
        """The HTTP port it was given (``--port``), if any."""
        if "--port" not in self.command:
            return None
        value = self.command[self.command.index("--port") + 1]
        return int(value) if value.isdigit() and int(value) else None

    @property
    def stop_seconds(self) -> int:
        """How long after SIGTERM it exits by itself at the latest."""
        return DRIVER_STOP_SECONDS if self.name.startswith("driver") else SERVICE_STOP_SECONDS

    def start(self) -> None:
        """Start it (from the launcher's main thread: see :mod:`srm_local.guard`)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(
                f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(self.command)}\n".encode()
            )
            log.flush()
            self.process = subprocess.Popen(
                guarded(os.getpid(), self.command),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=self.env,
            )
        record = {"pid": self.process.pid, "port": self.port, "command": self.command}
        self.pid_path.write_text(json.dumps(record) + "\n")

    def exit_code(self) -> int | None:
        """None while running (or never started)."""
        return None if self.process is None else self.process.poll()

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM, wait (by default its own bound plus a margin), then SIGKILL the group
        (the service's children too: Spark's JVM)."""
        process = self.process
        if process is None:
            return
        if timeout is None:
            timeout = self.stop_seconds + STOP_MARGIN_SECONDS
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        process.wait()
        self.pid_path.unlink(missing_ok=True)


def stop_in_parallel(services: Iterable[ServiceProcess]) -> None:
    """Stop ``services`` at once; returns when each has (within its bound)."""
    services = list(services)
    if not services:
        return
    with ThreadPoolExecutor(max_workers=len(services)) as pool:
        for future in [pool.submit(service.stop) for service in services]:
            future.result()


def _config_args(config_path: Path, overrides: dict[str, str]) -> list[str]:
    args = ["--config", str(config_path)]
    for key, value in overrides.items():
        args += ["--set", f"{key}={value}"]
    return args


def coordinator_service(
    name: str, port: int, config_path: Path, overrides: dict[str, str]
) -> ServiceProcess:
    """``srm-coordinator`` named ``name`` on ``port``; its memory of the log it followed
    in the run dir. Every coordinator of the local stack runs the one file, and an edit of
    it is meant to take effect at the next ``make up``: so they apply it
    (``--apply-config``)."""
    state = run_dir() / "services" / f"{name}-log.json"
    args = [*_config_args(config_path, overrides), "--id", name, "--port", str(port)]
    return ServiceProcess(
        name, "srm_coordinator", [*args, "--state-file", str(state), "--apply-config"]
    )


def gateway_service(
    config_path: Path, overrides: dict[str, str], token_file: Path | None = None
) -> ServiceProcess:
    """``srm-api-gateway`` on SRM_GATEWAY_PORT (default 8080): the HTTP API people use;
    its SQL read model a SQLite file in the run dir (``SRM_GATEWAY_DB_URL`` moves it, e.g.
    to PostgreSQL); ``token_file`` is what it bears when it relays a command."""
    port = os.environ.get("SRM_GATEWAY_PORT", "8080")
    args = [*_config_args(config_path, overrides), "--port", port]
    if token_file is not None:
        args += ["--token-file", str(token_file)]
    args += ["--state-dir", str(run_dir() / "services")]
    if os.environ.get("SRM_GATEWAY_DB_URL"):
        args += ["--db-url", os.environ["SRM_GATEWAY_DB_URL"]]
    return ServiceProcess("gateway", "srm_api_gateway", args)


def aggregator_service(
    config_path: Path, overrides: dict[str, str], cluster: str
) -> ServiceProcess:
    """``srm-metrics-aggregator`` for one target cluster; Faust's data in the run dir."""
    data = run_dir() / "services" / f"aggregator-{cluster}"
    args = [*_config_args(config_path, overrides), "--cluster", cluster, "--data-dir", str(data)]
    return ServiceProcess(f"aggregator-{cluster}", "srm_metrics_aggregator", args)


def driver_service(
    config_path: Path,
    overrides: dict[str, str],
    *,
    name: str = "driver",
    port: int = 0,
    token_file: Path | None = None,
    target: str | None = None,
) -> ServiceProcess:
    """``srm-driver`` for the stack's configuration (ports moved by SRM_<ALIAS>_PORT);
    ``token_file`` is what it bears to the coordinator leader; ``target``: the one
    cluster whose flows it runs (``--target``), else every target."""
    spark_master = os.environ.get("SRM_SPARK_MASTER", "local[2]")
    args = [*_config_args(config_path, overrides), "--id", name, "--port", str(port)]
    if token_file is not None:
        args += ["--token-file", str(token_file)]
    if target is not None:
        args += ["--target", target]
    return ServiceProcess(name, "srm_driver", [*args, "--spark-master", spark_master])
