"""The raw limit of ``make bench``: the best of several client-only copies of the data set.

Candidates, one after the other, each on a freshly wiped target:

* the Python copy loop (:mod:`srm_bench.raw_loop`: the copy slot's own librdkafka clients
  and settings, nothing else) in each of :data:`srm_bench.raw_loop.SETTINGS`, run and
  measured exactly as a replicator (:func:`srm_bench.catchup.measure_catchup`: copy rate
  from the first to the last record on the target, steady CPU seconds per GiB and peak RSS
  of its process tree);
* Kafka's perf tools, consumer and producer at once (:mod:`srm_bench.raw`; their own
  timing, no CPU figure).

``raw limit = the candidate with the highest copy rate``; the table's raw column shows its
figures and the notes every candidate's. A candidate that fails is left out (and named).

With ``--batch-copy`` the batch pass-through prototype (:mod:`srm_bench.batch_loop`:
record batches copied without decoding, through a Kafka client of its own) runs after
them, measured the same way and reported apart: it is not the copy slot's client, so it
is not a limit of the slot; it says what passing batches through would buy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from srm_bench.catchup import RunningReplicator, measure_catchup
from srm_bench.options import BenchOptions, Dataset
from srm_bench.progress import say
from srm_bench.raw import RawResult, measure_raw
from srm_bench.raw_loop import SETTINGS, LoopSetting
from srm_bench.replicators import Replicator, remote_topic
from srm_bench.stack import BenchStack, create_topic

DEFINITION = (
    "the best copy rate of the candidates below, each alone on a wiped target: the Python"
    " loop (the copy slot's librdkafka clients and settings, nothing else; measured as a"
    " replicator) and Kafka's perf tools (consumer and producer at once, their own timing)"
)
PERF_TOOLS = "Kafka perf tools"


@dataclass(frozen=True)
class RawCandidate:
    name: str
    mb_s: float
    records_s: float
    cpu_s_per_gib: float | None = None
    peak_rss_mb: float | None = None

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "mb_s": round(self.mb_s, 2),
            "records_s": round(self.records_s),
            "cpu_s_per_gib": None if self.cpu_s_per_gib is None else round(self.cpu_s_per_gib, 2),
            "peak_rss_mb": None if self.peak_rss_mb is None else round(self.peak_rss_mb, 1),
        }


@dataclass(frozen=True)
class RawLimit:
    """Every candidate that ran; the limit is the fastest (see the module docstring)."""

    candidates: tuple[RawCandidate, ...]
    perf_tools: RawResult | None = None
    errors: dict[str, str] = field(default_factory=dict)
    batch_copy: RawCandidate | None = None  # the prototype, never the limit

    @property
    def best(self) -> RawCandidate:
        return max(self.candidates, key=lambda c: c.mb_s)

    @property
    def mb_s(self) -> float:
        return self.best.mb_s

    @property
    def records_s(self) -> float:
        return self.best.records_s

    @property
    def cpu_s_per_gib(self) -> float | None:
        return self.best.cpu_s_per_gib

    @property
    def peak_rss_mb(self) -> float | None:
        return self.best.peak_rss_mb

    def describe(self) -> dict[str, object]:
        return {
            "definition": DEFINITION,
            "best": self.best.name,
            "mb_s": round(self.mb_s, 2),
            "records_s": round(self.records_s),
            "cpu_s_per_gib": None if self.cpu_s_per_gib is None else round(self.cpu_s_per_gib, 2),
            "candidates": [candidate.describe() for candidate in self.candidates],
            "perf_tools": self.perf_tools.describe() if self.perf_tools else None,
            "batch_copy_prototype": self.batch_copy.describe() if self.batch_copy else None,
            "errors": self.errors,
        }

    def notes(self) -> list[str]:
        lines = [f"raw limit: {DEFINITION}"]
        for c in sorted(self.candidates, key=lambda c: -c.mb_s):
            cpu = "" if c.cpu_s_per_gib is None else f", {c.cpu_s_per_gib:.1f} CPU s per GiB"
            rss = "" if c.peak_rss_mb is None else f", peak RSS {c.peak_rss_mb:,.0f} MB"
            best = " (the limit)" if c is self.best else ""
            lines.append(f"  {c.name}: {c.mb_s:.1f} MB/s{cpu}{rss}{best}")
        if self.perf_tools:
            tools = self.perf_tools
            lines.append(
                f"  ({PERF_TOOLS}: consumer {tools.consumer.mb_s:.1f} MB/s in"
                f" {tools.consumer.seconds:.1f} s, producer {tools.producer.mb_s:.1f} MB/s in"
                f" {tools.producer.seconds:.1f} s)"
            )
        if self.batch_copy:
            c = self.batch_copy
            lines.append(
                f"  ({c.name}, not the copy slot and not in the limit: {c.mb_s:.1f} MB/s,"
                f" {c.cpu_s_per_gib or 0:.1f} CPU s per GiB, peak RSS {c.peak_rss_mb or 0:,.0f} MB)"
            )
        lines += [
            f"  {name} FAILED: {error.splitlines()[0]}" for name, error in self.errors.items()
        ]
        return lines


def perf_tools_candidate(result: RawResult) -> RawCandidate:
    return RawCandidate(PERF_TOOLS, result.mb_s, result.records_s)


def _copy_command(module: str, source: str, target: str, dataset: Dataset) -> list[str]:
    """A client-only copy of the data set run as a replicator (``python -m module``)."""
    import sys

    return [
        sys.executable, "-m", module,
        "--source", source, "--target", target,
        "--topic", dataset.topic, "--remote", remote_topic(dataset.topic),
        "--partitions", str(dataset.partitions), "--records", str(dataset.records),
    ]  # fmt: skip


def loop_replicator(
    setting: LoopSetting, source: str, target: str, dataset: Dataset, folder: Path
) -> Replicator:
    stem = f"raw-loop-{setting.processes}p{'-tuned' if setting.producer else ''}"
    command = [*_copy_command("srm_bench.raw_loop", source, target, dataset), *setting.arguments()]
    if dataset.codec:  # as the copy slot does on a compressed topic: the source's codec
        command += ["--set", f"producer.compression.type={dataset.codec}"]
    return Replicator(setting.name, command, folder / f"{stem}.args", folder / f"{stem}.log")


BATCH_COPY = "batch pass-through prototype"


def batch_copy_replicator(source: str, target: str, dataset: Dataset, folder: Path) -> Replicator:
    command = _copy_command("srm_bench.batch_loop", source, target, dataset)
    return Replicator(BATCH_COPY, command, folder / "batch-copy.args", folder / "batch-copy.log")


def _run_candidate(
    replicator: Replicator, options: BenchOptions, stack: BenchStack, errors: dict[str, str]
) -> RawCandidate | None:
    """One client-only copy on a wiped target, measured as a replicator (None: it failed,
    and ``errors`` says why)."""
    dataset = options.dataset()
    name = replicator.label
    say(f"  raw: {name} (wiping backup: {stack.reset_target():.1f} s)")
    create_topic(stack.target_admin(), remote_topic(dataset.topic), dataset.partitions)
    try:
        with RunningReplicator(replicator) as running:
            catchup = measure_catchup(
                running, stack.target_admin(), dataset, options.catchup_deadline()
            )
    except (RuntimeError, TimeoutError) as exc:
        errors[name] = str(exc)
        say(f"  raw: {name} FAILED: {exc}")
        return None
    say(
        f"  raw: {name}: {catchup.mb_s:.1f} MB/s,"
        f" {catchup.cpu_s_per_gib or 0:.1f} CPU s per GiB, RSS {catchup.peak_rss_mb:,.0f} MB"
    )
    return RawCandidate(
        name, catchup.mb_s, catchup.records_s, catchup.cpu_s_per_gib, catchup.peak_rss_mb
    )


def measure_raw_limit(
    options: BenchOptions,
    stack: BenchStack,
    folder: Path,
    settings: Sequence[LoopSetting] = SETTINGS,
    *,
    perf_tools: Callable[[], RawResult] | None = None,
) -> RawLimit:
    """Run every candidate (see the module docstring); raises RuntimeError when none ran."""
    dataset = options.dataset()
    source, target = stack.source.bootstrap_servers, stack.target.bootstrap_servers
    candidates: list[RawCandidate] = []
    errors: dict[str, str] = {}
    for setting in settings:
        replicator = loop_replicator(setting, source, target, dataset, folder)
        candidate = _run_candidate(replicator, options, stack, errors)
        if candidate is not None:
            candidates.append(candidate)
    tools = None
    say(f"  raw: {PERF_TOOLS} (wiping backup: {stack.reset_target():.1f} s)")
    try:
        tools = (perf_tools or (lambda: measure_raw(source, target, dataset, folder)))()
        candidates.append(perf_tools_candidate(tools))
        say(f"  raw: {PERF_TOOLS}: {tools.mb_s:.1f} MB/s")
    except (RuntimeError, ValueError) as exc:
        errors[PERF_TOOLS] = str(exc)
        say(f"  raw: {PERF_TOOLS} FAILED: {exc}")
    if not candidates:
        raise RuntimeError("; ".join(f"{name}: {error}" for name, error in errors.items()))
    batch_copy = None
    if options.batch_copy:
        replicator = batch_copy_replicator(source, target, dataset, folder)
        batch_copy = _run_candidate(replicator, options, stack, errors)
    return RawLimit(tuple(candidates), tools, errors, batch_copy)
