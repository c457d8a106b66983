"""The plumbing of `make test-containers` (compose_check.py): the stack's names and
host ports, docker-compose as one project, polling, and the table of figures a run
prints. Pure parts are unit-tested in tests/test_compose_check.py, with no Docker."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# make up's ports (and the compose file's defaults): other engineers' stacks use them.
RESERVED_PORTS = frozenset({9092, 9192, 8080})


TOPIC = "orders"


REMOTE = "primary.orders"


AGGREGATORS = ("metrics-aggregator-primary", "metrics-aggregator-backup")


DRIVERS = "driver-backup"  # the set scaled: the drivers pinned to backup


OTHER_DRIVERS = 1  # driver-primary, pinned to primary, not scaled


LOGGED_SERVICES = (
    "coordinator-1",
    "coordinator-2",
    DRIVERS,
    "driver-primary",
    "gateway",
    "postgres",
    *AGGREGATORS,
)


# What the aggregators publish (srm_common.metrics.aggregate.AGGREGATED_TOPIC).
AGGREGATED_TOPIC = "srm-metrics-aggregated.internal"


@dataclass(frozen=True)
class StepFigures:
    """One step of the run: what was checked, how long it took, what the copy held."""

    name: str
    seconds: float
    produced: int | None = None
    found: int | None = None
    missing: int | None = None
    duplicated: int | None = None


def free_ports(count: int, *, avoid: Iterable[int] = RESERVED_PORTS) -> list[int]:
    """``count`` distinct free loopback ports, none of ``avoid`` (held open together, so
    the system does not hand out one twice)."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < count:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            held.append(sock)
            port = sock.getsockname()[1]
            if port not in avoid and port not in ports:
                ports.append(port)
    finally:
        for sock in held:
            sock.close()
    return ports


def compose_command(environ: dict[str, str] | None = None) -> list[str]:
    """SRM_COMPOSE if set, else Debian's docker-compose
    when installed, else the `docker compose` plugin."""
    chosen = (environ if environ is not None else os.environ).get("SRM_COMPOSE", "").strip()
    if chosen:
        return shlex.split(chosen)
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return ["docker", "compose"]


def report(steps: Sequence[StepFigures]) -> str:
    """The figures as a table, one step a line (counts blank where a step copies nothing)."""
    lines = [
        f"{'step':<36} {'time':>8} {'produced':>9} {'found':>9} {'missing':>8} {'duplicated':>10}"
    ]
    for step in steps:
        counts = [step.produced, step.found, step.missing, step.duplicated]
        cells = ["" if c is None else str(c) for c in counts]
        lines.append(
            f"{step.name:<36} {step.seconds:>6.1f} s {cells[0]:>9} {cells[1]:>9} {cells[2]:>8}"
            f" {cells[3]:>10}"
        )
    lines.append(f"{'total':<36} {sum(s.seconds for s in steps):>6.1f} s")
    return "\n".join(lines)


class Compose:
    """docker-compose (or `docker compose`) on the root's docker-compose.yml, as one
    project with its own ports."""

    def __init__(self, project: str, ports: dict[str, int], command: list[str]) -> None:
        self.project = project
        self.command = command
        self.env = {
            **os.environ,
            "SRM_PRIMARY_PORT": str(ports["primary"]),
            "SRM_BACKUP_PORT": str(ports["backup"]),
            "SRM_GATEWAY_PORT": str(ports["gateway"]),
        }

    def run(self, *args: str, capture: bool = False, check: bool = True) -> str:
        argv = [*self.command, "-p", self.project, "-f", str(ROOT / "docker-compose.yml"), *args]
        done = subprocess.run(
            argv,
            cwd=ROOT,
            env=self.env,
            text=True,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.STDOUT if capture else None,
            check=False,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{shlex.join(argv)} exited with {done.returncode}")
        return done.stdout or ""

    def containers(self, service: str) -> list[str]:
        return self.run("ps", "-q", service, capture=True).split()


class Run:
    """One run: the clock, progress lines and the figures of each step."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.steps: list[StepFigures] = []

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:7.1f} s] {text}", flush=True)


def get_json(url: str, timeout: float = 5) -> object:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def poll(predicate: Callable[[], object], timeout: float, what: str, step: float = 1.0) -> object:
    """``predicate()`` until it returns something true (errors count as not yet); that
    value, or TimeoutError naming ``what`` and the last error."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while True:
        try:
            value = predicate()
            if value:
                return value
            last = f"last answer: {value!r}"[:500]
        except Exception as exc:  # noqa: BLE001 - anything not ready yet is retried
            last = f"last error: {exc}"[:500]
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s ({last})")
        time.sleep(step)


def first_run_end(container: str, lines: int = 40) -> str:
    """The last ``lines`` log lines of a restarted container's first run: the failure's
    tail that ``docker-compose logs --tail`` no longer shows once the second run logged."""
    logs = subprocess.run(
        ["docker", "logs", container], capture_output=True, text=True, check=False
    )
    output = (logs.stdout + logs.stderr).splitlines()
    starts = [n for n, line in enumerate(output) if ": app " in line and " raw partitions" in line]
    end = starts[1] if len(starts) > 1 else len(output)
    return "\n".join(output[max(0, end - lines) : end])
