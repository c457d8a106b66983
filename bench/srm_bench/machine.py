"""What the figures were measured on: the machine, its load, and every version involved."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path

from srm_local.jars import kafka_version
from srm_local.paths import project_root

from srm_bench.process_tree import sample_tree

_TICKS = os.sysconf("SC_CLK_TCK")


def describe_machine() -> dict[str, object]:
    return {
        "cores": os.cpu_count(),
        "ram_gib": round(_meminfo_kib("MemTotal") / 2**20, 1),
        "cpu_model": _cpu_model(),
        "kernel": platform.release(),
        "load_average_at_start": [round(value, 2) for value in os.getloadavg()],
    }


def describe_versions() -> dict[str, object]:
    return {
        "kafka": kafka_version(),
        "java": _java_version(),
        "python": platform.python_version(),
        "pyspark": _package_version("pyspark"),
        "confluent_kafka": _package_version("confluent-kafka"),
        "srm_driver": _package_version("srm-driver"),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
    }


class ForeignCpu:
    """How much of the machine's CPU went to processes this run did not start.

    Between ``__enter__`` and ``__exit__``: busy CPU time of the whole machine (from
    /proc/stat) minus that of this process and everything it started (brokers,
    replicators, perf tools), as a share of all cores. Other users' tests on the same
    machine show up here; they make the figures slower and noisier.
    """

    def __init__(self) -> None:
        self.share = 0.0
        self._start = (0.0, 0.0, 0.0)

    def __enter__(self) -> ForeignCpu:
        self._start = _cpu_snapshot()
        return self

    def __exit__(self, *_exc: object) -> None:
        end = _cpu_snapshot()
        wall = end[0] - self._start[0]
        busy = end[1] - self._start[1]
        ours = end[2] - self._start[2]
        cores = os.cpu_count() or 1
        self.share = max(0.0, (busy - ours) / (wall * cores)) if wall > 0 else 0.0


def _cpu_snapshot() -> tuple[float, float, float]:
    """(monotonic time, machine busy CPU seconds, our process tree's CPU seconds)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    # user nice system idle iowait irq softirq steal: everything but idle and iowait.
    values = [int(value) for value in fields[:8]]
    busy = sum(values) - values[3] - values[4]
    return time.monotonic(), busy / _TICKS, sample_tree(os.getpid()).cpu_seconds


def _meminfo_kib(field: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _java_version() -> str:
    try:
        result = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    first = (result.stderr or result.stdout).splitlines()
    return first[0].strip() if first else "unknown"


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    try:
        result = subprocess.run(
            ["git", "-C", str(project_root()), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None
