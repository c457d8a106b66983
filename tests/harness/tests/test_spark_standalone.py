"""srm_harness.spark_standalone.SparkStandalone's executor logs when several tests share a
cluster: after ``forget_earlier_apps`` only the applications started since are read (the
work dirs' layout, ``<worker>/<application>/<executor>/stderr``, made by hand: no Spark)."""

from __future__ import annotations

from pathlib import Path

from srm_harness.spark_standalone import SparkStandalone


def _stderr(folder: Path, worker: str, app: str, text: str) -> None:
    path = folder / worker / app / "0" / "stderr"
    path.parent.mkdir(parents=True)
    path.write_text(text)


def test_a_test_reads_only_the_executor_logs_of_its_own_applications(tmp_path: Path) -> None:
    cluster = SparkStandalone(tmp_path)
    _stderr(tmp_path, "worker-0", "app-1", "copy slot 0 of job old")
    _stderr(tmp_path, "worker-1", "app-1", "copy slot 1 of job old")
    assert "job old" in cluster.executor_log("worker-0")

    cluster.forget_earlier_apps()
    assert cluster.executor_log("worker-0") == ""
    assert cluster.executor_logs() == ""

    _stderr(tmp_path, "worker-1", "app-2", "copy slot 0 of job new")
    assert cluster.executor_log("worker-0") == ""
    assert cluster.executor_log("worker-1") == "copy slot 0 of job new"
    assert cluster.executor_logs() == "copy slot 0 of job new"


def test_a_cluster_that_does_not_answer_is_not_untouched(tmp_path: Path) -> None:
    """No master at its web URL: not the cluster ``start()`` made, so it is started anew."""
    cluster = SparkStandalone(tmp_path, web_url="http://127.0.0.1:9")
    assert not cluster.untouched()
