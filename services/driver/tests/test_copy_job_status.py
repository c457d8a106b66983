"""How the copy job reads Spark's status to decide how many slots remain (pure: a fake
status tracker stands in for Spark's, which follows listener events)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import SimpleNamespace

from srm_driver.copying.job import CopyJob


@dataclass
class _Tracker:
    jobs: dict[int, SimpleNamespace] = field(default_factory=dict)
    stages: dict[int, SimpleNamespace] = field(default_factory=dict)

    def getJobIdsForGroup(self, _group: str) -> list[int]:  # noqa: N802 - Spark's name
        return list(self.jobs)

    def getJobInfo(self, job: int) -> SimpleNamespace | None:  # noqa: N802
        return self.jobs.get(job)

    def getStageInfo(self, stage: int) -> SimpleNamespace | None:  # noqa: N802
        return self.stages.get(stage)


def _job(tracker: _Tracker, alive: int) -> CopyJob:
    job = CopyJob.__new__(CopyJob)
    job._session = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait, daemon=True) for _ in range(alive)]
    for thread in threads:
        thread.start()
    job._threads = threads
    job._stop_threads = stop  # type: ignore[attr-defined]
    return job


def _running(stage: int) -> SimpleNamespace:
    return SimpleNamespace(status="RUNNING", stageIds=[stage])


def test_slots_remaining_are_the_running_jobs_unfinished_tasks() -> None:
    tracker = _Tracker(
        jobs={
            1: _running(10),
            2: _running(11),
            3: SimpleNamespace(status="SUCCEEDED", stageIds=[12]),
        },
        stages={
            10: SimpleNamespace(numTasks=2, numCompletedTasks=1),
            11: SimpleNamespace(numTasks=1, numCompletedTasks=0),
        },
    )
    job = _job(tracker, alive=2)
    try:
        assert job._remaining("j") == 2, "1 of job 1's two slots and job 2's one; job 3 is over"
    finally:
        job._stop_threads.set()  # type: ignore[attr-defined]


def test_a_slot_job_not_yet_in_sparks_status_makes_the_count_unknown() -> None:
    tracker = _Tracker(
        jobs={1: _running(10)}, stages={10: SimpleNamespace(numTasks=2, numCompletedTasks=0)}
    )
    job = _job(tracker, alive=2)
    try:
        assert job._remaining("j") is None
    finally:
        job._stop_threads.set()  # type: ignore[attr-defined]


def test_finished_jobs_spark_has_forgotten_do_not_stop_the_count() -> None:
    """Many slot jobs ended (their threads too) and Spark kept none of them: the running
    one alone is compared with the one thread alive."""
    tracker = _Tracker(
        jobs={1500: _running(10)}, stages={10: SimpleNamespace(numTasks=1, numCompletedTasks=0)}
    )
    job = _job(tracker, alive=1)
    ended = [threading.Thread(target=lambda: None) for _ in range(1200)]
    for thread in ended:
        thread.start()
        thread.join()
    job._threads = ended + job._threads
    try:
        assert job._remaining("j") == 1
    finally:
        job._stop_threads.set()  # type: ignore[attr-defined]
