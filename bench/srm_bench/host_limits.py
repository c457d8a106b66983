"""What a scale point needs from the host, checked before the first point starts.

A Kafka broker keeps one open file per log segment and maps two index files per
partition, so at tens of thousands of partitions the defaults of a Linux host stop it
half-way: 20,000 open files (the broker dies with ``Too many open files``) and
``vm.max_map_count`` 65,530 (``Map failed``, the broker aborts). Each of the bench's two
brokers holds every partition of the data set, so the limits are per broker. The
bench raises its own open-file limit, which the brokers inherit, when the host lets it;
a kernel setting it only reports, with the command that fixes it.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

# Sockets, jars, internal topics, the controller's log and the JVM's own maps, above the
# per-partition cost (index files are mapped and closed: only the segment stays open).
FILES_HEADROOM = 2_000
MAPS_HEADROOM = 20_000
MAP_COUNT = Path("/proc/sys/vm/max_map_count")

# A broker's heap by the data set's partitions: the test clusters' 768 MB ran out on the
# source at 10,000 partitions after three replicators had fetched them all (OutOfMemoryError,
# the broker unresponsive, the run lost); kafka-server-start.sh's own default is 1 GB.
_HEAPS = ((2_000, None), (20_000, "2g"))
_HEAP_LARGEST = "4g"


def broker_heap(partitions: int) -> str | None:
    """The heap of each broker for a data set of ``partitions`` (None: the default)."""
    for below, heap in _HEAPS:
        if partitions < below:
            return heap
    return _HEAP_LARGEST


@dataclass(frozen=True)
class Needs:
    open_files: int
    map_count: int


def needs(partitions: int) -> Needs:
    return Needs(partitions + FILES_HEADROOM, 2 * partitions + MAPS_HEADROOM)


def problems(partitions: int, *, open_files_hard: int, map_count: int, root: bool) -> list[str]:
    """What stops brokers holding ``partitions`` on this host, each with its fix."""
    need = needs(partitions)
    found = []
    if open_files_hard < need.open_files and not root:
        found.append(_open_files_problem(partitions, open_files_hard))
    if map_count < need.map_count:
        found.append(
            f"{partitions:,} partitions need vm.max_map_count >= {need.map_count:,} (it is"
            f" {map_count:,}); as root: sysctl -w vm.max_map_count={max(need.map_count, 262_144)}"
        )
    return found


def prepare(partitions: int) -> list[str]:
    """Raise this process's open-file limit for ``partitions`` (the brokers inherit it);
    returns what still stands in the way (empty: go)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    root = os.geteuid() == 0
    found = problems(
        partitions,
        open_files_hard=hard,
        map_count=int(MAP_COUNT.read_text()),
        root=root,
    )
    if found:
        return found
    need = needs(partitions).open_files
    if soft < need:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, max(hard, need)))
        except (ValueError, OSError):  # root without CAP_SYS_RESOURCE (a container)
            return [_open_files_problem(partitions, hard)]
    return []


def _open_files_problem(partitions: int, hard: int) -> str:
    need = needs(partitions).open_files
    largest = max(0, hard - FILES_HEADROOM)
    return (
        f"{partitions:,} partitions need {need:,} open files per broker but the hard limit is"
        f" {hard:,} and this process may not raise it: raise it for the user (ulimit -Hn,"
        f" limits.conf, or the container's nofile limit), spread them over more brokers"
        f" (--brokers N: each holds about 1/N), or keep a broker's share at or below"
        f" {largest:,} partitions"
    )
