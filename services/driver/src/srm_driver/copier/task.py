"""The Spark task of a copy slot, run in a PySpark Python worker.

:func:`run_slots` is what ``foreachPartition`` runs for each slot of the copy job: it
returns when the slot has ended (the driver said stop, or no longer knows the job) and
none of its units can write any more. Spark runs it again only when it lost the executor
it ran on (task retries and speculation are refused by the driver); each run names itself
in its reports (:func:`slot_run`), and the driver fences the old one.

While a slot runs it holds an exclusive ``flock`` on ``<locks>/<job>-<slot>.lock`` (when
the driver's lock folder exists here: local mode). The kernel releases the lock when the
process ends however it ends, so the driver knows that no slot process can still write
(:meth:`srm_driver.copying.job.CopyJob.active_slots`).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from srm_driver.copier.control import SlotRunner

log = logging.getLogger(__name__)


def run_slots(
    slots: Iterable[int],
    *,
    control_url: str,
    job_id: str,
    secret: str,
    locks: str | None,
    server_certificate: str | None = None,
) -> None:
    """Run each slot of this Spark partition (one) until it ends; ``server_certificate``:
    the driver's HTTPS listener's, the only one its reports trust."""
    _setup_logging()
    for slot in slots:
        with slot_lock(locks, job_id, slot):
            run = slot_run()
            log.info(
                "copy slot %d of job %s started (pid %d, task attempt %s on %s)",
                slot,
                job_id,
                os.getpid(),
                run["attempt"],
                run["executor"],
            )
            SlotRunner(control_url, job_id, slot, secret, run, server_certificate).run()
            log.info("copy slot %d of job %s ended", slot, job_id)


def slot_run() -> dict[str, object]:
    """This run of the slot: a new id, Spark's attempt number of the task (a task run
    again after its executor was lost has a higher one) and where it runs, for people."""
    attempt = 0
    try:
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is not None:
            attempt = context.attemptNumber()
    except ImportError:  # outside Spark (tests)
        pass
    executor_id = _executor_id()
    host = socket.gethostname()
    executor = f"executor {executor_id} ({host})" if executor_id else f"{host} pid {os.getpid()}"
    return {
        "id": uuid.uuid4().hex,
        "attempt": attempt,
        "executor": executor,
        "executor_id": executor_id,
    }


def _executor_id() -> str:
    """Spark's id of the executor this runs in, "" when it cannot tell: a standalone
    worker runs an executor in ``<work>/<app>/<executor id>``, the Python worker's working
    folder; Kubernetes executor pods carry it in ``SPARK_EXECUTOR_ID``."""
    folder = Path.cwd()
    if folder.parent.name.startswith("app-") and folder.name.isdigit():
        return folder.name
    return os.environ.get("SPARK_EXECUTOR_ID", "").strip()


@contextlib.contextmanager
def slot_lock(folder: str | None, job_id: str, slot: int) -> Iterator[None]:
    """Hold ``<folder>/<job>-<slot>.lock`` while the slot runs (nothing without the folder)."""
    if folder is None or not Path(folder).is_dir():
        yield
        return
    path = Path(folder) / f"{job_id}-{slot}.lock"
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def running_slots(folder: str) -> int:
    """How many slot locks in ``folder`` a process holds now."""
    held = 0
    for path in Path(folder).glob("*.lock"):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held += 1
        finally:
            os.close(fd)
    return held


def _setup_logging() -> None:
    """Worker processes log to their stderr (the executor's log: the driver's own in
    local mode), secrets masked, as the driver does."""
    root = logging.getLogger()
    if root.handlers:
        return
    from srm_common.cli_support import setup_logging

    setup_logging()
    logging.getLogger("py4j").setLevel(logging.WARNING)
