"""Local JVM processes by pid file: whether one still runs, stopping it (SIGTERM, then
SIGKILL), and the end of its logs for an error message."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path


def pid_running_with(pid_file: Path, argument: Path) -> int | None:
    """The pid in ``pid_file`` if that process runs with ``argument`` on its command line
    (a stale pid file, or a pid reused by another program, gives None)."""
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if str(argument).encode() in cmdline else None


def stop_process(pid: int | None, pid_file: Path, timeout: float) -> bool:
    """SIGTERM ``pid``, SIGKILL after ``timeout``, then remove ``pid_file``; True when a
    running process was stopped."""
    if pid is None:
        pid_file.unlink(missing_ok=True)
        return False
    _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    if _alive(pid):
        _signal(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.05)
    pid_file.unlink(missing_ok=True)
    return True


def log_tails(logs: Iterable[Path], lines: int = 20) -> str:
    """The last ``lines`` of each of ``logs`` that exists, under a heading naming it."""
    chunks = []
    for log in logs:
        if log.exists():
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            chunks.append(f"--- last lines of {log} ---\n" + "\n".join(tail))
    return "\n".join(chunks)


def _alive(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)  # reap our own child so it does not linger as a zombie
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child still "exists"; treat it as gone.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
