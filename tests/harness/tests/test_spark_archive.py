"""srm_harness.spark_archive: the drivers tests start get the archive only once it exists."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_harness import spark_archive


def test_no_archive_no_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SRM_CACHE_DIR", str(tmp_path))
    assert spark_archive.driver_archive_options() == ()


def test_a_built_archive_is_handed_to_the_drivers_jvm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SRM_CACHE_DIR", str(tmp_path))
    path = spark_archive.archive_path()
    assert path.parent == tmp_path / "spark-cds"
    assert "pyspark-" in path.name  # a new PySpark gets an archive of its own
    path.parent.mkdir()
    path.write_bytes(b"archive")
    assert spark_archive.driver_archive_options() == (f"-XX:SharedArchiveFile={path}",)
    assert spark_archive.build() == path  # built once: never rebuilt while it exists
