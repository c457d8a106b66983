"""Steady CPU per GiB and the raw limit's arithmetic, with fakes for processes and clusters."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import srm_bench.catchup as catchup_module
import srm_bench.raw_limit as raw_limit_module
from srm_bench.catchup import CatchupResult, cpu_per_gib, measure_catchup
from srm_bench.options import GIB, BenchOptions, Dataset
from srm_bench.raw import RawResult, ToolRun
from srm_bench.raw_limit import PERF_TOOLS, RawCandidate, RawLimit, measure_raw_limit
from srm_bench.raw_loop import SETTINGS, LoopSetting, _parse, partitions_of
from srm_bench.replicators import Replicator


def test_cpu_per_gib_is_cpu_seconds_over_gib_and_none_without_bytes() -> None:
    assert cpu_per_gib(3.0, GIB // 2) == 6.0
    assert cpu_per_gib(0.5, 4 * GIB) == 0.125
    assert cpu_per_gib(1.0, 0) is None


class _Sample:
    def __init__(self, cpu: float) -> None:
        self.cpu_seconds = cpu


class _Monitor:
    """CPU seconds of the process tree at each sample, in order."""

    def __init__(self, cpu: list[float]) -> None:
        self.cpu = cpu
        self.peak_rss_bytes = 512 * 2**20
        self.peak_processes = 3

    def sample(self) -> _Sample:
        return _Sample(self.cpu.pop(0))


class _Running:
    """A replicator whose clock reads ``times`` at each poll."""

    def __init__(self, times: list[float], cpu: list[float]) -> None:
        self.times = times
        self.monitor = _Monitor(cpu)
        self.replicator = Replicator("srm", ["true"], Path("c"), Path("l"))

    def check_running(self) -> None:
        pass

    def elapsed(self) -> float:
        return self.times.pop(0)


def test_steady_cpu_is_taken_between_the_first_and_the_last_record_on_the_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dataset = Dataset("t", 2, 1024, 4 * 1024 * 1024)  # 4 GiB, 2 partitions of 2M records
    half = dataset.records // 2
    polls = iter([
        None,  # the topic does not exist yet (start-up)
        {0: 0, 1: 0},
        {0: 1024 * 256, 1: 1024 * 256},  # first records: 0.5 M of them, 0.5 GiB
        {0: half // 2, 1: half},
        {0: half, 1: half + 7},  # caught up, 7 past the source's end
    ])  # fmt: skip
    monkeypatch.setattr(catchup_module, "end_offsets_or_none", lambda *_: next(polls))
    monkeypatch.setattr(catchup_module.time, "sleep", lambda _s: None)
    monkeypatch.setattr(catchup_module, "say", lambda _m: None)
    # CPU: 20 s of start-up when the first records show, 41 s when caught up.
    running = _Running(times=[1.0, 2.0, 10.0, 12.0, 20.0], cpu=[20.0, 41.0])
    result = measure_catchup(running, None, dataset, timeout=100)  # type: ignore[arg-type]
    assert result.first_record_seconds == 10.0 and result.copy_seconds == 10.0
    assert result.cpu_seconds == 41.0, "from the process start: start-up included"
    assert result.copy_cpu_seconds == 21.0, "between the first and the last record seen"
    copied_gib = (dataset.records - 2 * 1024 * 256) * 1024 / GIB
    assert copied_gib == 3.5
    assert result.cpu_s_per_gib == pytest.approx(21.0 / 3.5)
    assert result.mb_s == pytest.approx(3.5 * 1024 / 10.0)
    assert result.peak_rss_mb == 512.0 and result.target_offsets_past_source == 7


def _catchup(mb_s: float, per_gib: float) -> CatchupResult:
    return CatchupResult(9.0, 2.0, 7.0, 1000, mb_s, mb_s * 1024, 50.0, 400.0, 30.0, 3, 0,
                         10.0, per_gib)  # fmt: skip


class _Stack:
    class _Cluster:
        def __init__(self, bootstrap: str) -> None:
            self.bootstrap_servers = bootstrap

    def __init__(self) -> None:
        self.source, self.target = self._Cluster("s:1"), self._Cluster("t:1")
        self.resets = 0

    def reset_target(self) -> float:
        self.resets += 1
        return 1.0

    def target_admin(self) -> None:
        return None


def test_raw_limit_is_the_fastest_candidate_and_a_failed_one_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    figures = {SETTINGS[0].name: _catchup(80.0, 9.0), SETTINGS[1].name: _catchup(150.0, 7.5)}
    started: list[list[str]] = []

    @contextmanager
    def running(replicator: Replicator) -> Iterator[Replicator]:
        started.append(replicator.command)
        yield replicator

    def measured(replicator: Replicator, *_args: Any) -> CatchupResult:
        if replicator.name not in figures:
            raise RuntimeError(f"{replicator.name} exited with code 1\nlog tail")
        return figures[replicator.name]

    monkeypatch.setattr(raw_limit_module, "RunningReplicator", running)
    monkeypatch.setattr(raw_limit_module, "measure_catchup", measured)
    monkeypatch.setattr(raw_limit_module, "create_topic", lambda *_a: None)
    monkeypatch.setattr(raw_limit_module, "say", lambda _m: None)
    tools = RawResult(120.0, 122880.0, ToolRun(5.0, 200.0, 1.0), ToolRun(8.5, 120.0, 1.0))
    stack = _Stack()
    limit = measure_raw_limit(
        BenchOptions(size_mb=16), stack, tmp_path, SETTINGS[:3],  # type: ignore[arg-type]
        perf_tools=lambda: tools,
    )  # fmt: skip
    assert stack.resets == 4, "every candidate on a wiped target"
    assert [c.name for c in limit.candidates] == [SETTINGS[0].name, SETTINGS[1].name, PERF_TOOLS]
    assert limit.best.name == SETTINGS[1].name
    assert (limit.mb_s, limit.cpu_s_per_gib) == (150.0, 7.5)
    assert list(limit.errors) == [SETTINGS[2].name]
    assert ["--processes", "4"] == started[2][-2:]
    notes = "\n".join(limit.notes())
    assert (
        f"{SETTINGS[1].name}: 150.0 MB/s, 7.5 CPU s per GiB, peak RSS 400 MB (the limit)" in notes
    )
    assert f"{PERF_TOOLS}: 120.0 MB/s\n" in notes and "FAILED: " in notes
    assert limit.describe()["best"] == SETTINGS[1].name


def test_raw_limit_fails_only_when_no_candidate_ran(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken() -> RawResult:
        raise RuntimeError("kafka-producer-perf-test exited with 1")

    monkeypatch.setattr(raw_limit_module, "say", lambda _m: None)
    with pytest.raises(RuntimeError, match="exited with 1"):
        measure_raw_limit(BenchOptions(size_mb=16), _Stack(), tmp_path, (),  # type: ignore[arg-type]
                          perf_tools=broken)  # fmt: skip


def test_raw_limit_with_the_perf_tools_only_has_no_cpu_figure() -> None:
    limit = RawLimit((RawCandidate(PERF_TOOLS, 120.0, 1.0),))
    assert limit.cpu_s_per_gib is None and limit.describe()["cpu_s_per_gib"] is None


def test_loop_processes_share_the_partitions_as_copy_slots_do() -> None:
    for processes in (1, 2, 3, 4):
        shares = [partitions_of(n, processes, 8) for n in range(processes)]
        assert sorted(p for share in shares for p in share) == list(range(8))
    assert partitions_of(1, 2, 8) == [1, 3, 5, 7]
    assert partitions_of(5, 6, 4) == [], "more processes than partitions: some copy nothing"


def test_loop_setting_arguments_are_what_the_loop_parses() -> None:
    setting = LoopSetting(2, producer={"batch.size": "1048576"}, consumer={"fetch.max.bytes": "9"})
    args = _parse(["--source", "s", "--target", "t", "--topic", "a", "--remote", "b",
                   "--partitions", "8", "--records", "10", *setting.arguments()])  # fmt: skip
    assert args.processes == 2
    assert args.set == ["producer.batch.size=1048576", "consumer.fetch.max.bytes=9"]
    assert setting.name == "Python loop, 2 processes, fetch.max.bytes=9, batch.size=1048576"
    assert LoopSetting(1).name == "Python loop, 1 process"
