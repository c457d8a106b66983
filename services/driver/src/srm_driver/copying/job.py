"""The copy job on Spark: one long-lived job of ``slots`` tasks, each a copy slot.

The slots are Python (:mod:`srm_driver.copier`): one ``foreachPartition`` task per slot
in PySpark's Python workers, each copying with librdkafka's clients (confluent-kafka);
nothing per record goes through Py4J. The call blocks while the slots run, so it runs
on a thread of its own; the slots find the driver through the control URL and bear the
driver's per-run secret in each report (``Authorization: Bearer``), which Spark hands to
the executors with the task: protect Spark's own traffic (``spark.authenticate``,
``spark.network.crypto.enabled``) when executors run on other hosts. Everything here
is the adapter over Spark: what the slots do is decided by
:class:`srm_driver.copying.service.CopyService`.
"""

from __future__ import annotations

import functools
import logging
import shutil
import tempfile
import threading
import uuid
from typing import TYPE_CHECKING

from srm_driver.copier.task import run_slots, running_slots

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


class CopyJob:
    """Starts and watches the one copy job of a driver. In local mode each slot process
    holds a lock file in a folder of this driver while it runs, which is how
    :meth:`active_slots` knows that none can still write; on a cluster only the slots'
    leases tell."""

    def __init__(
        self,
        session: SparkSession,
        control_url: str,
        secret: str,
        server_certificate: str | None = None,
    ) -> None:
        """``server_certificate``: the PEM of the HTTPS listener at ``control_url``, which
        the slots trust alone (wherever they run, whatever CA signed it)."""
        self._session = session
        self._control_url = control_url
        self._secret = secret
        self._server_certificate = server_certificate
        self.slots = max(1, int(session.sparkContext.defaultParallelism))
        self.local = str(session.sparkContext.master).startswith("local")
        self.job_id: str | None = None
        self.error: str | None = None
        self._thread: threading.Thread | None = None
        self._locks = tempfile.mkdtemp(prefix="srm-copy-slots-") if self.local else None

    def start(self) -> str:
        """Start a new job; its id (slots of other ids are told to stop)."""
        job_id = uuid.uuid4().hex[:12]
        self.job_id = job_id
        self.error = None
        self._thread = threading.Thread(
            target=self._run, args=(job_id,), name=f"copy job {job_id}", daemon=True
        )
        self._thread.start()
        log.info("copy job %s: %d slots on Spark", job_id, self.slots)
        return job_id

    def _run(self, job_id: str) -> None:
        context = self._session.sparkContext
        try:
            context.setJobGroup(f"srm-copy-{job_id}", f"srm copy slots of job {job_id}")
            task = functools.partial(
                run_slots,
                control_url=self._control_url,
                job_id=job_id,
                secret=self._secret,
                locks=self._locks,
                server_certificate=self._server_certificate,
            )
            context.parallelize(range(self.slots), self.slots).foreachPartition(task)
        except Exception as exc:  # noqa: BLE001 - Spark's errors: reported, the service restarts
            self.error = _first_line(exc)
            log.error("copy job %s ended: %s", job_id, self.error)

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def cancel(self) -> None:
        """Ask Spark to kill the job's tasks (their slots stop their loops)."""
        if self.job_id is None:
            return
        try:
            self._session.sparkContext.cancelJobGroup(f"srm-copy-{self.job_id}")
        except Exception as exc:  # noqa: BLE001 - the JVM may be gone already
            log.info("cancelling the copy job: %s", _first_line(exc))

    def join(self, timeout: float) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running()

    def active_slots(self) -> int | None:
        """Slot processes of this driver still running (local mode); None on a cluster."""
        if self._locks is None:
            return None
        return running_slots(self._locks)

    def close(self) -> None:
        if self._locks is not None:
            shutil.rmtree(self._locks, ignore_errors=True)


def _first_line(exc: BaseException) -> str:
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            while java.getCause() is not None and java.getCause() != java:
                java = java.getCause()
            return str(java.toString())
        except Exception:  # noqa: BLE001 - the JVM may be gone
            pass
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
