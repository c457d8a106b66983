"""One replicator cold-started on the scale data set: how long until every record is on
the target (or "never", and why), when each partition got its first record, how long a
topic created afterwards takes, memory and CPU.

Every partition of the remote topics is polled once a second (a few ListOffsets requests
for all of them). A replicator that makes no progress for ``stall`` seconds while its log
shows an error it repeats (MirrorMaker 2's ``Unable to perform excessively large batch
operation``) is reported as never catching up, with that error; one that is still short
at the deadline likewise, with the last error its log shows.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

from srm_bench.catchup import RunningReplicator
from srm_bench.progress import say
from srm_bench.replicators import remote_topic
from srm_bench.scale_data import ScaleDataset, create_topics, end_offsets, load

POLL_SECONDS = 1.0
NEW_TOPIC = "scale.new"
# Errors that, repeated with no progress, mean a replicator will never catch up.
FATAL_PATTERNS = ("excessively large",)


@dataclass(frozen=True)
class ScaleResult:
    """What one replicator did on one data set; seconds from its process start."""

    catchup_seconds: float | None
    never: str | None
    first_record_seconds: float | None
    first_copy_p50_seconds: float | None
    first_copy_p99_seconds: float | None
    partitions_complete: int
    records_copied: int
    new_topic_seconds: float | None
    new_topic_note: str | None
    peak_rss_mb: float
    cpu_seconds: float
    cpu_by_process: dict[str, float]
    # After the new topic: srm_bench.scale_latency's figures (None: not measured).
    steady_latency: dict[str, object] | None = None

    def describe(self) -> dict[str, object]:
        return {k: round(v, 2) if isinstance(v, float) else v for k, v in asdict(self).items()}


def measure(
    running: RunningReplicator,
    target: AdminClient,
    source_bootstrap: str,
    source: AdminClient,
    dataset: ScaleDataset,
    *,
    deadline: float,
    stall: float,
    new_topic_deadline: float,
) -> ScaleResult:
    """Cold start to every record copied, then a new topic; see the module docstring."""
    label = running.replicator.label
    remote = [(remote_topic(t), p) for t, p in dataset.source_partitions()]
    first: dict[tuple[str, int], float] = {}
    complete = 0
    copied = 0
    last_progress = 0.0
    last_note = 0.0
    never: str | None = None
    caught_up: float | None = None
    while True:
        running.check_running()
        now = running.elapsed()
        ends = end_offsets(target, remote)
        copied_now = sum(min(end, dataset.records) for end in ends.values())
        for tp, end in ends.items():
            if end > 0 and tp not in first:
                first[tp] = now
        complete = sum(1 for end in ends.values() if end >= dataset.records)
        if copied_now > copied:
            copied, last_progress = copied_now, now
        if complete == len(remote):
            caught_up = now
            break
        if now - last_note >= 10:
            say(
                f"  {label}: {now:.0f} s, {len(first):,} of {len(remote):,} partitions"
                f" started, {complete:,} complete, {copied:,} of {dataset.total_records:,}"
                " records"
            )
            last_note = now
        fatal = _fatal(running.replicator.log_path)
        if fatal is not None and now - last_progress >= stall:
            never = f"no progress for {now - last_progress:.0f} s; its log repeats: {fatal}"
            break
        if now >= deadline:
            log = running.replicator.log_path
            error = _fatal(log) or _last_error(log)
            never = f"not caught up within {deadline:.0f} s"
            never += f"; last error: {error}" if error else ""
            break
        time.sleep(POLL_SECONDS)
    assert running.monitor is not None
    sample = running.monitor.sample()
    peak_rss = running.monitor.peak_rss_bytes / 2**20
    firsts = sorted(first.values())
    if never is not None:
        say(f"  {label}: NEVER caught up: {never}")
        new_seconds, new_note = None, "not measured: the data set was never copied"
    else:
        say(f"  {label}: every record on the target after {caught_up:.1f} s")
        new_seconds, new_note = _new_topic(
            running, target, source_bootstrap, source, dataset, new_topic_deadline
        )
    return ScaleResult(
        catchup_seconds=caught_up,
        never=never,
        first_record_seconds=firsts[0] if firsts else None,
        first_copy_p50_seconds=_rank(firsts, len(remote), 0.50),
        first_copy_p99_seconds=_rank(firsts, len(remote), 0.99),
        partitions_complete=complete,
        records_copied=copied,
        new_topic_seconds=new_seconds,
        new_topic_note=new_note,
        peak_rss_mb=max(peak_rss, running.monitor.peak_rss_bytes / 2**20),
        cpu_seconds=sample.cpu_seconds,
        cpu_by_process=_by_name(sample.cpu_members),
    )


def _new_topic(
    running: RunningReplicator,
    target: AdminClient,
    source_bootstrap: str,
    source: AdminClient,
    dataset: ScaleDataset,
    deadline: float,
) -> tuple[float | None, str | None]:
    """Create ``scale.new`` (as many partitions and records as a data set topic) while
    the replicator runs; seconds until all its records are on the target."""
    create_topics(source, [NEW_TOPIC], dataset.partitions)
    load(source_bootstrap, dataset, [NEW_TOPIC])
    started = time.monotonic()
    remote = [(remote_topic(NEW_TOPIC), p) for p in range(dataset.partitions)]
    while True:
        running.check_running()
        waited = time.monotonic() - started
        ends = end_offsets(target, remote)
        if len(ends) == len(remote) and all(e >= dataset.records for e in ends.values()):
            label = running.replicator.label
            say(f"  {label}: a new topic was copied {waited:.1f} s after it was written")
            return waited, None
        if waited > deadline:
            return None, f"not copied within {deadline:.0f} s"
        time.sleep(0.25)


def _by_name(members: tuple[tuple[str, float], ...]) -> dict[str, float]:
    """CPU seconds per command name (a Spark driver's java, its python...)."""
    totals: dict[str, float] = {}
    for name, seconds in members:
        totals[name] = round(totals.get(name, 0.0) + seconds, 1)
    return totals


def _rank(values: list[float], population: int, share: float) -> float | None:
    """Nearest-rank percentile over ``population`` partitions; None when fewer than that
    share of them got a record at all."""
    if not values:
        return None
    rank = max(1, int(share * population + 0.999999))
    return values[rank - 1] if rank <= len(values) else None


def _fatal(log: Path) -> str | None:
    for line in reversed(_tail(log)):
        if any(pattern in line.lower() for pattern in FATAL_PATTERNS):
            return _short(line)
    return None


def _last_error(log: Path) -> str | None:
    for line in reversed(_tail(log)):
        if re.search(r"\b(ERROR|Exception)\b", line):
            return _short(line)
    return None


def _tail(log: Path, size: int = 200_000) -> list[str]:
    if not log.exists():
        return []
    with log.open("rb") as handle:
        handle.seek(max(0, log.stat().st_size - size))
        return handle.read().decode(errors="replace").splitlines()


def _short(line: str) -> str:
    line = line.strip()
    return line if len(line) <= 300 else line[:297] + "..."
