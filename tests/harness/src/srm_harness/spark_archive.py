"""A class-data-sharing archive of the Spark driver JVM, for the drivers tests start.

Most of a driver process's start is its Spark JVM loading and verifying Spark's classes.
An AppCDS archive (Java's ``-XX:ArchiveClassesAtExit``, then ``-XX:SharedArchiveFile``)
holds them already parsed; measured on this 2-core machine (one ``local[1]`` session and
one Python job, C1 only, three rounds, load 4-6): 8.2-9.1 s -> 5.6-5.8 s to the end of
the first job, JVM CPU 6.6-7.2 -> 3.2-4.0 s (docs/testing.md, "Where the time goes").

``python -m srm_harness.spark_archive`` (``make test`` runs it) builds the archive once
into the cache, named after the installed PySpark: one Spark session with the same class
path and options as a test's driver, stopped cleanly so that the JVM writes the archive
as it exits. :func:`driver_archive_options` hands it to
:class:`~srm_harness.processes.DriverProcess`. The JVM checks an archive against its own
build and class path and runs without it (a warning line in the driver's log) when they
differ, so a stale archive costs the saving, never a failure. Drivers of ``make up`` and
operators never use it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from srm_local.jars import pyspark_version
from srm_local.paths import cache_dir


def archive_path() -> Path:
    """Where the archive of the installed PySpark's driver JVM lives (it may not exist)."""
    return cache_dir() / "spark-cds" / f"driver-pyspark-{pyspark_version()}.jsa"


def driver_archive_options() -> tuple[str, ...]:
    """``-XX:SharedArchiveFile=...`` when the archive was built, else nothing."""
    path = archive_path()
    return (f"-XX:SharedArchiveFile={path}",) if path.is_file() else ()


def build(timeout: float = 300) -> Path | None:
    """Build the archive unless it exists; its path, or None (with the reason printed)
    when it could not be built: tests then run without it."""
    path = archive_path()
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    print(f"building the Spark driver's class-data archive {path} (one Spark start)...")
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "srm_harness.spark_archive", "--dump", str(partial)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        pid = next(
            (int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("JVM ")),
            None,
        )
        # The JVM writes the archive as it exits, after the Python side has returned.
        deadline = time.monotonic() + 120
        while pid is not None and Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        if done.returncode != 0 or pid is None or not partial.is_file():
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            print("no archive (tests run without it): " + " | ".join(tail), file=sys.stderr)
            return None
        os.replace(partial, path)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"no archive (tests run without it): {exc}", file=sys.stderr)
        return None
    finally:
        partial.unlink(missing_ok=True)
    print(f"built in {time.monotonic() - started:.0f} s ({path.stat().st_size // 2**20} MiB)")
    return path


def _dump(target: str) -> int:
    """One session as a test's driver starts it (local[1], Spark's class path, no extra jars)
    and one Python job, then a clean stop: the JVM writes ``target`` as it exits."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    # The compiler options need not match the drivers' (C1 only): an archive holds
    # classes, not compiled code.
    options = f"-XX:ArchiveClassesAtExit={target}"

    session = (
        SparkSession.builder.master("local[1]")
        .appName("srm-cds-archive")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", options)
        .getOrCreate()
    )
    session.sparkContext.parallelize([1, 2], 1).map(lambda x: x + 1).collect()
    print(f"JVM {session.sparkContext._gateway.proc.pid}", flush=True)  # type: ignore[union-attr]
    session.stop()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--dump"]:
        sys.exit(_dump(sys.argv[2]))
    build()  # never fails a test run: without the archive tests run as before
