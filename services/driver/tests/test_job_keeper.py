"""The copy job's life (srm_driver.copying.job_keeper): a job that ended by itself is
started again only once no slot of it can write; Spark's failure to start is kept."""

from __future__ import annotations

from srm_driver.copying.job_keeper import JobKeeper
from srm_driver.copying.ledger import Ledger
from srm_driver.copying.slots import Slots
from srm_driver.spark import SparkSetupError
from srm_driver.testing import FakeCopyJob

WRITE_TIMEOUT_MS = 10_000


def _cluster_job() -> FakeCopyJob:
    """A copy job on a cluster (not local): its slots may outlive it on executors."""
    job = FakeCopyJob()
    job.local, job.active = False, 1
    return job


def _keeper(job: FakeCopyJob) -> tuple[JobKeeper, Ledger]:
    ledger = Ledger({}, lambda event: None, settle_s=6.0, wait_out_s=12.0)
    return JobKeeper(job, ledger, Slots(ledger, 0.0), WRITE_TIMEOUT_MS), ledger


def test_a_job_that_ended_starts_again_after_its_last_lease_and_the_write_timeout() -> None:
    job = _cluster_job()
    keeper, ledger = _keeper(job)
    keeper.tick(100.0)
    assert (keeper.id, job.started) == ("job-1", 1)
    ledger.granted[0] = 130.0  # slot 0's lease runs to 130 s
    job.job_id, job.error = None, "executor lost"  # the job ended by itself
    keeper.tick(101.0)
    assert keeper.id is None
    # Its slots may still write until 130 s + the write timeout (10 s) + 1 s.
    for now in (101.5, 120.0, 140.9):
        keeper.tick(now)
        assert (keeper.id, job.started) == (None, 1), f"restarted at {now} s"
    keeper.tick(141.0)
    assert (keeper.id, job.started) == ("job-2", 2)
    assert ledger.granted == {}, "the old job's leases are forgotten"


def test_a_local_job_whose_slots_all_ended_starts_again_at_once() -> None:
    job = _cluster_job()
    job.local = True
    keeper, ledger = _keeper(job)
    keeper.tick(100.0)
    ledger.granted[0] = 130.0
    job.job_id, job.active = None, 0  # no slot runs on this host any more
    keeper.tick(101.0)
    assert (keeper.id, job.started) == ("job-2", 2)


def test_spark_that_cannot_start_is_fatal_and_no_job_starts() -> None:
    job = _cluster_job()
    job.up = SparkSetupError("no Java 17")
    keeper, _ledger = _keeper(job)
    keeper.tick(100.0)
    assert (keeper.spark_up, keeper.fatal, keeper.id) == (False, "no Java 17", None)
    assert job.started == 0


def test_a_stop_is_proven_finished_only_for_a_local_job_with_no_slot_left() -> None:
    job = _cluster_job()
    keeper, _ledger = _keeper(job)
    keeper.tick(100.0)
    assert keeper.stop(1.0) is False  # on a cluster: slots may still run elsewhere
    assert keeper.stopping
    job.local, job.active = True, 0
    assert keeper.stop(1.0) is True
