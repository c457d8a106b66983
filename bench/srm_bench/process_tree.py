"""Memory and CPU of a process and all its descendants, sampled from /proc.

SRM's driver is a Python process with a Spark JVM child (and Python workers under
that); MirrorMaker 2 is one JVM. Either way the figure is the whole tree: the sum of
every member's resident set (VmRSS) at one instant, and the peak of that sum over the
samples. Shared pages (forked Python workers) count once per process, as ``ps`` and
``top`` count them.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

_PAGE = os.sysconf("SC_PAGE_SIZE")
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class TreeSample:
    rss_bytes: int
    cpu_seconds: float
    members: tuple[tuple[str, int], ...] = ()  # (command name, RSS bytes) per process
    cpu_members: tuple[tuple[str, float], ...] = ()  # (command name, CPU seconds) per process

    @property
    def processes(self) -> int:
        return len(self.members)


def descendants(root: int) -> list[int]:
    """``root`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _read_stat(int(entry.name))
        if stat is not None:
            children.setdefault(int(stat[1][1]), []).append(int(entry.name))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def sample_tree(root: int) -> TreeSample:
    """RSS and CPU time (user + system, including reaped children) of the tree now."""
    rss = 0
    cpu_ticks = 0
    members = []
    cpu_members = []
    for pid in descendants(root):
        stat = _read_stat(pid)
        if stat is None:
            continue
        name, fields = stat
        # Fields after the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13)
        # cstime(14) ... rss(21), in pages.
        ticks = sum(int(value) for value in fields[11:15])
        cpu_ticks += ticks
        cpu_members.append((name, ticks / _TICKS))
        member_rss = int(fields[21]) * _PAGE
        rss += member_rss
        members.append((name, member_rss))
    return TreeSample(rss, cpu_ticks / _TICKS, tuple(members), tuple(cpu_members))


class TreeMonitor:
    """Samples a process tree every ``interval`` s in a thread; keeps the peak sample."""

    def __init__(self, root: int, interval: float = 0.25) -> None:
        self.root = root
        self.interval = interval
        self.peak = TreeSample(0, 0.0)
        self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-monitor", daemon=True)

    @property
    def peak_rss_bytes(self) -> int:
        return self.peak.rss_bytes

    def __enter__(self) -> TreeMonitor:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> TreeSample:
        sample = sample_tree(self.root)
        if sample.rss_bytes > self.peak.rss_bytes:
            self.peak = sample
        self.peak_processes = max(self.peak_processes, sample.processes)
        return sample

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)


def _read_stat(pid: int) -> tuple[str, list[str]] | None:
    """(command name, the fields after it) from /proc/<pid>/stat."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces or parentheses itself.
    name_end = text.rindex(")")
    return text[text.index("(") + 1 : name_end], text[name_end + 2 :].split()
