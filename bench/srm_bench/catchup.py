"""Running one replicator and timing how long it takes to copy the whole data set.

Catch-up is over when every partition of the remote topic ends at (or past) the
source partition's end offset. Times are taken from the process start (``wall``: JVM
and Spark start-up included) and between the first and the last observation of
copied records (``copy``: the rate of the copy itself). The target's end offsets are
polled every 0.1 s, which is the resolution of both.

CPU is taken the same two ways: the process tree's CPU seconds from its start to caught
up (``cpu_seconds``), and between the same two observations as the copy rate
(``copy_cpu_seconds``: start-up apart), which over the bytes copied between them gives
the steady-state ``cpu_s_per_gib``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass

from confluent_kafka.admin import AdminClient

from srm_bench.dataset import expected_end_offsets
from srm_bench.offsets import end_offsets_or_none
from srm_bench.options import GIB, MIB, Dataset
from srm_bench.process_tree import TreeMonitor
from srm_bench.progress import Progress, say
from srm_bench.replicators import Replicator, remote_topic

POLL_SECONDS = 0.1


class ReplicatorFailedError(RuntimeError):
    """The replicator exited or did not catch up in time; the message has its log tail."""


@dataclass(frozen=True)
class CatchupResult:
    wall_seconds: float
    first_record_seconds: float
    copy_seconds: float
    copy_records: int
    mb_s: float
    records_s: float
    wall_mb_s: float
    peak_rss_mb: float
    cpu_seconds: float
    processes: int
    target_offsets_past_source: int
    # CPU seconds between the first and the last observation of copied records, and
    # per GiB of record values copied meanwhile (None: too few records between them).
    copy_cpu_seconds: float | None = None
    cpu_s_per_gib: float | None = None

    def describe(self) -> dict[str, object]:
        return {key: _round(value) for key, value in asdict(self).items()}


class RunningReplicator:
    """A replicator process in its own session, sampled by a TreeMonitor while it runs."""

    def __init__(self, replicator: Replicator) -> None:
        self.replicator = replicator
        self.process: subprocess.Popen[bytes] | None = None
        self.monitor: TreeMonitor | None = None
        self.started = 0.0
        self.stop_seconds: float | None = None

    def __enter__(self) -> RunningReplicator:
        log = self.replicator.log_path.open("ab")
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            self.replicator.command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **self.replicator.env},
        )
        log.close()
        self.monitor = TreeMonitor(self.process.pid).__enter__()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def check_running(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            raise ReplicatorFailedError(
                f"{self.replicator.label} exited with code {self.process.returncode}\n"
                + self.log_tail()
            )

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM to the replicator, SIGKILL to its whole session after ``timeout``."""
        if self.process is None or self.stop_seconds is not None:
            return
        asked = time.monotonic()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                say(f"  {self.replicator.label}: no exit {timeout:.0f} s after SIGTERM, killing")
        self.stop_seconds = time.monotonic() - asked
        # Whatever is left of the session (a Spark JVM, Python workers) goes too.
        deadline = time.monotonic() + 10
        while _session_alive(self.process.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _session_alive(self.process.pid):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.poll()
        assert self.monitor is not None
        self.monitor.__exit__(None, None, None)

    def log_tail(self, lines: int = 25) -> str:
        path = self.replicator.log_path
        tail = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else []
        return f"--- last lines of {path} ---\n" + "\n".join(tail)


def measure_catchup(
    running: RunningReplicator, target: AdminClient, dataset: Dataset, timeout: float
) -> CatchupResult:
    """Wait until the remote topic holds the whole data set; see the module docstring."""
    source_ends = expected_end_offsets(dataset)
    remote = remote_topic(dataset.topic)
    label = running.replicator.label
    progress = Progress(label, "copying", dataset.bytes)
    first_seen: float | None = None
    first_records = 0
    first_cpu = 0.0
    last_note = 0.0
    while True:
        running.check_running()
        now = running.elapsed()
        if now > timeout:
            raise ReplicatorFailedError(
                f"{label} did not catch up within {timeout:.0f} s (--catchup-timeout)\n"
                + running.log_tail()
            )
        ends = end_offsets_or_none(target, remote, dataset.partitions)
        copied = sum(min(ends[p], end) for p, end in source_ends.items()) if ends else 0
        if copied and first_seen is None:
            first_seen, first_records = now, copied
            assert running.monitor is not None
            first_cpu = running.monitor.sample().cpu_seconds
            say(f"  {label}: first records on the target after {now:.1f} s")
        if first_seen is None and now - last_note >= 5:
            say(f"  {label}: starting ({now:.0f} s), no record on the target yet")
            last_note = now
        if first_seen is not None:
            progress.update(copied * dataset.record_size)
        if ends and all(ends[p] >= end for p, end in source_ends.items()):
            break
        time.sleep(POLL_SECONDS)
    assert running.monitor is not None and first_seen is not None
    sample = running.monitor.sample()
    wall = now
    copy_seconds = max(wall - first_seen, POLL_SECONDS)
    copy_records = dataset.records - first_records
    excess = sum(ends.values()) - dataset.records
    copy_cpu = sample.cpu_seconds - first_cpu
    return CatchupResult(
        wall_seconds=wall,
        first_record_seconds=first_seen,
        copy_seconds=copy_seconds,
        copy_records=copy_records,
        mb_s=copy_records * dataset.record_size / MIB / copy_seconds,
        records_s=copy_records / copy_seconds,
        wall_mb_s=dataset.mib / wall,
        peak_rss_mb=running.monitor.peak_rss_bytes / MIB,
        cpu_seconds=sample.cpu_seconds,
        processes=running.monitor.peak_processes,
        target_offsets_past_source=excess,
        copy_cpu_seconds=copy_cpu,
        cpu_s_per_gib=cpu_per_gib(copy_cpu, copy_records * dataset.record_size),
    )


def cpu_per_gib(cpu_seconds: float, value_bytes: int) -> float | None:
    """CPU seconds per GiB of record values; None when nothing was copied in between
    (the whole data set arrived between two polls: no steady state to speak of)."""
    if value_bytes <= 0:
        return None
    return cpu_seconds / (value_bytes / GIB)


def _session_alive(session_id: int) -> bool:
    try:
        os.killpg(session_id, 0)
    except ProcessLookupError:
        return False
    return True


def _round(value: object) -> object:
    return round(value, 3) if isinstance(value, float) else value
