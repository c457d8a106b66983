"""`make down`: stop everything of the local stack within a bound, and prove it.

What belongs to the stack is what its files under the run folder name, read before
anything is stopped: the launcher (``stack.pid``), each service (``services/<name>.pid``:
its process group and HTTP port) and each cluster (``kafka/<alias>/kafka.pid`` and its
two ports). Stopping, in order, each step in parallel:

1. the launcher (SIGTERM): it stops its services and clusters itself, within
   :data:`LAUNCHER_STOP_SECONDS`; past that it is killed (its services then get SIGTERM
   from the kernel, :mod:`srm_local.guard`);
2. services still recorded (a launcher that was killed): SIGTERM to the process, SIGKILL
   to the group past the service's bound;
3. clusters still running: SIGTERM (controlled shutdown), SIGKILL after 30 s.

Then every recorded process group, cluster pid and port is checked again: anything still
alive, or a port still held, is named (pid and command line) and the exit code is 1.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from srm_common.shutdown import DRIVER_STOP_SECONDS, SERVICE_STOP_SECONDS

from srm_local.clusters import LocalKafkaCluster, find_clusters
from srm_local.paths import run_dir
from srm_local.services import STOP_MARGIN_SECONDS

CLUSTER_STOP_SECONDS = 30
LAUNCHER_STOP_SECONDS = (
    DRIVER_STOP_SECONDS + SERVICE_STOP_SECONDS + 2 * STOP_MARGIN_SECONDS + CLUSTER_STOP_SECONDS + 5
)
"""How long the launcher may take to stop its drivers, then its other services, then its
clusters (each step in parallel, each bounded) before `make down` kills it: 73 s."""


def stack_pid_file() -> Path:
    return run_dir() / "stack.pid"


@dataclass(frozen=True)
class RecordedService:
    """A service as ``services/<name>.pid`` records it."""

    name: str
    pid: int
    port: int | None
    path: Path

    @property
    def stop_seconds(self) -> int:
        return DRIVER_STOP_SECONDS if self.name.startswith("driver") else SERVICE_STOP_SECONDS


def recorded_services(folder: Path | None = None) -> list[RecordedService]:
    """Every service pid file under the run folder (a torn or foreign file is skipped)."""
    folder = folder or run_dir() / "services"
    found = []
    for path in sorted(folder.glob("*.pid")) if folder.is_dir() else []:
        try:
            record = json.loads(path.read_text())
            found.append(RecordedService(path.stem, int(record["pid"]), record.get("port"), path))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found


def launcher_pid() -> int | None:
    """The running `srm-local up` named by ``stack.pid``, if it is one."""
    try:
        pid = int(stack_pid_file().read_text().strip())
    except (OSError, ValueError):
        return None
    command = command_line(pid)
    return pid if "srm_local" in command or "srm-local" in command else None


def down() -> int:
    """Stop the stack; 0 when nothing of it is left, 1 naming what survived."""
    started = time.monotonic()
    launcher = launcher_pid()
    services = recorded_services()
    clusters = [c for c in find_clusters(run_dir()) if c.pid() is not None]
    ports = stack_ports(services, clusters)
    groups = {s.name: s.pid for s in services}
    cluster_pids = {c.alias: c.pid() for c in clusters}
    if launcher is None and not services and not clusters:
        print("nothing was running")
        return 0
    if launcher is not None:
        how = stop_launcher(launcher)
        print(f"stopped the foreground `srm-local up` (pid {launcher}, {how})")
    leftovers = [s for s in recorded_services() if group_members(s.pid)]
    if leftovers:
        names = ", ".join(s.name for s in leftovers)
        print(f"stopping services the launcher left: {names}")
        _parallel(stop_recorded, leftovers)
    for service in recorded_services():
        if not group_members(service.pid):
            service.path.unlink(missing_ok=True)
    running = [c for c in find_clusters(run_dir()) if c.pid() is not None]
    for alias, stopped in zip(
        [c.alias for c in running],
        _parallel(lambda c: c.stop(timeout=CLUSTER_STOP_SECONDS), running),
        strict=True,
    ):
        if stopped:
            print(f"stopped cluster {alias}")
    stack_pid_file().unlink(missing_ok=True)
    survivors = survivors_of(launcher, groups, cluster_pids, ports)
    took = time.monotonic() - started
    if survivors:
        print(f"make down: {len(survivors)} left running after {took:.1f} s:")
        for line in survivors:
            print(f"  {line}")
        print("stop them by hand (kill PID) before the next `make up`")
        return 1
    print(f"make down: nothing of the stack is running ({took:.1f} s)")
    return 0


def stop_launcher(pid: int) -> str:
    """SIGTERM, wait :data:`LAUNCHER_STOP_SECONDS`, then SIGKILL; how it ended."""
    _signal(pid, signal.SIGTERM)
    if _wait_gone(lambda: _alive(pid), LAUNCHER_STOP_SECONDS):
        return "it stopped its services and clusters"
    print(
        f"the launcher (pid {pid}) was still stopping after {LAUNCHER_STOP_SECONDS} s;"
        " killing it (its services get SIGTERM from the kernel)"
    )
    _signal(pid, signal.SIGKILL)
    _wait_gone(lambda: _alive(pid), 10)
    return "killed"


def stop_recorded(service: RecordedService) -> None:
    """SIGTERM to the service, SIGKILL to its group past its bound."""
    _signal(service.pid, signal.SIGTERM)
    if not _wait_gone(
        lambda: group_members(service.pid), service.stop_seconds + STOP_MARGIN_SECONDS
    ):
        try:
            os.killpg(service.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _wait_gone(lambda: group_members(service.pid), 10)


def stack_ports(
    services: Iterable[RecordedService], clusters: Iterable[LocalKafkaCluster]
) -> list[tuple[int, str]]:
    """(port, whose) of every port the stack listens on."""
    ports = [(s.port, s.name) for s in services if s.port]
    for cluster in clusters:
        ports += [(cluster.spec.port, f"kafka {cluster.alias}")]
        ports += [(cluster.spec.quorum_port, f"kafka {cluster.alias} (controller)")]
    return ports  # type: ignore[return-value]


def survivors_of(
    launcher: int | None,
    groups: dict[str, int],
    cluster_pids: dict[str, int | None],
    ports: Sequence[tuple[int, str]],
) -> list[str]:
    """One line per process of the stack still alive and per port still held."""
    lines = []
    if launcher is not None and _alive(launcher):
        lines.append(f"the launcher srm-local up: pid {launcher}")
    for name, pgid in groups.items():
        for pid in group_members(pgid):
            lines.append(f"{name}: pid {pid} ({command_line(pid)[:120]})")
    for alias, pid in cluster_pids.items():
        if pid is not None and _alive(pid):
            lines.append(f"kafka {alias}: pid {pid}")
    for port, whose in ports:
        holder = port_holder(port)
        if holder is not None:
            lines.append(f"port {port} ({whose}) is held by {holder}")
    return lines


# --- processes and ports, from /proc --------------------------------------------------------


def command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(raw.decode(errors="replace").split())


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def port_holder(port: int) -> str | None:
    """``pid N (command)`` of the process listening on TCP ``port``, ``a process of
    another user`` when its sockets cannot be read, None when nobody listens."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                return f"pid {entry.name} ({command_line(int(entry.name))[:120]})"
    return "a process this user cannot see"


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if (
                len(fields) > 9
                and fields[3] == "0A"
                and int(fields[1].rsplit(":", 1)[1], 16) == port
            ):
                inodes.add(fields[9])
    return inodes


def _alive(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_gone(alive, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    """Poll ``alive()`` until false or ``seconds`` pass; True when gone."""
    deadline = time.monotonic() + seconds
    while alive():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _parallel(work, items):  # type: ignore[no-untyped-def]
    items = list(items)
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        return list(pool.map(work, items))
