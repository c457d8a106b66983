"""The copy job on Spark: long-lived tasks, each a copy slot, one per core Spark has.

The slots are Python (:mod:`srm_driver.copier`): one ``foreachPartition`` task per slot
in PySpark's Python workers, each copying with librdkafka's clients (confluent-kafka);
nothing per record goes through Py4J. The call blocks while the slots run, so it runs
on a thread of its own; the slots find the driver through the control URL and bear the
driver's per-run secret in each report (``Authorization: Bearer``), which Spark hands to
the executors with the task: protect Spark's own traffic (``spark.authenticate``,
``spark.network.crypto.enabled``) when executors run on other hosts. Everything here
is the adapter over Spark: what the slots do is decided by
:class:`srm_driver.copying.service.CopyService`.

The slots follow the cores: the job starts with Spark's default parallelism, and
:meth:`CopyJob.grow` starts more (a Spark job of their own, in the same job group) while
Spark can run more tasks at once than slots remain to be run: an executor was added, or a
slot ended (a run fenced as lost ends when it wakes) and freed its core. A slot task that
Spark will run again after losing its executor still counts as remaining, so a lost slot
is run again on the next free core rather than replaced by a new one beside it.

:meth:`CopyJob.executors` lists the executors Spark has now, which the service asks every
second to find slots whose executor Spark removed (``copying/slots.py``). It is one Py4J
call into the scheduler's own map of registered executors (``SparkContext.getExecutorIds``,
the list Spark's own allocation manager uses), answered from memory: cheaper and with
fewer moving parts than a JVM listener reached through a Py4J callback server (a port, a
thread and a class on the driver's JVM), and it cannot miss an event: a list polled says
what is true now, whatever happened between two polls.
"""

from __future__ import annotations

import functools
import logging
import shutil
import tempfile
import threading
import time
import uuid
from typing import TYPE_CHECKING

from srm_driver.copier.task import run_slots, running_slots

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from srm_driver.spark import SparkStart

log = logging.getLogger(__name__)


class CopyJob:
    """Starts and watches the one copy job of a driver. In local mode each slot process
    holds a lock file in a folder of this driver while it runs, which is how
    :meth:`active_slots` knows that none can still write; on a cluster only the slots'
    leases tell."""

    def __init__(
        self,
        spark: SparkStart,
        control_url: str,
        secret: str,
        server_certificate: str | None = None,
    ) -> None:
        """``spark``: Spark, maybe still starting (the job starts once it is up:
        :meth:`ready`); ``server_certificate``: the PEM of the HTTPS listener at
        ``control_url``, which the slots trust alone (wherever they run, whatever CA
        signed it)."""
        self._spark = spark
        self._session: SparkSession | None = None
        self._control_url = control_url
        self._secret = secret
        self._server_certificate = server_certificate
        self.slots = 0  # known once Spark is up
        self.local = spark.master.startswith("local")
        self.job_id: str | None = None
        self.error: str | None = None
        # The Spark jobs of this copy job's slots (the first, and one per grow()).
        self._threads: list[threading.Thread] = []
        self._next_slot = self.slots
        self._locks = tempfile.mkdtemp(prefix="srm-copy-slots-") if self.local else None

    def ready(self) -> bool:
        """Whether Spark is up (then :attr:`slots` is its parallelism); raises
        :class:`srm_driver.spark.SparkSetupError` when Spark could not start."""
        if self._session is None:
            session = self._spark.session()
            if session is None:
                return False
            self.slots = max(1, int(session.sparkContext.defaultParallelism))
            self._session = session
        return True

    def _context(self) -> SparkContext:
        assert self._session is not None, "Spark is not up yet: ask ready() first"
        return self._session.sparkContext

    def start(self) -> str:
        """Start a new job (Spark is up: :meth:`ready`); its id (slots of other ids are
        told to stop)."""
        job_id = uuid.uuid4().hex[:12]
        self.job_id = job_id
        self.error = None
        self._threads = []
        self._next_slot = self.slots
        self._submit(job_id, list(range(self.slots)))
        log.info("copy job %s: %d slots on Spark", job_id, self.slots)
        return job_id

    def grow(self) -> list[int]:
        """Start a slot for each task Spark can run at once beyond the slots that remain
        to be run (running, or waiting for a core); the new slots' numbers."""
        job_id = self.job_id
        if job_id is None or not self.running():
            return []
        try:
            remaining = self._remaining(job_id)
            wanted = 0 if remaining is None else self._capacity() - remaining
        except Exception as exc:  # noqa: BLE001 - Py4J errors: asked again next time
            log.info("cannot ask Spark for its executors now: %s", _first_line(exc))
            return []
        if wanted <= 0:
            return []
        slots = list(range(self._next_slot, self._next_slot + wanted))
        self._next_slot += wanted
        self._submit(job_id, slots)
        log.info(
            "copy job %s: Spark can run %d more tasks (executors added or slots ended):"
            " starting copy slots %s",
            job_id,
            wanted,
            ", ".join(map(str, slots)),
        )
        return slots

    def executors(self) -> frozenset[str] | None:
        """The ids of the executors Spark has now (its scheduler's registered executors:
        one that disconnected, was killed with its worker or was removed by the cluster
        manager is gone from it within about a second); None in local mode (no executor
        can be lost apart from the driver) or when Spark cannot be asked now."""
        if self.local:
            return None
        try:
            listed = self._context()._jsc.sc().getExecutorIds().mkString("\n")
        except Exception as exc:  # noqa: BLE001 - Py4J errors: asked again next time
            log.info("cannot ask Spark for its executors now: %s", _first_line(exc))
            return None
        return frozenset(str(listed).split()) if listed else frozenset()

    def _capacity(self) -> int:
        """How many tasks Spark can run at once on the executors it has now."""
        context = self._context()._jsc.sc()
        profile = context.resourceProfileManager().defaultResourceProfile()
        return int(context.maxNumConcurrentTasks(profile))

    def _remaining(self, job_id: str) -> int | None:
        """Slot tasks of this copy job that Spark has not finished (running, or waiting
        for a core: a task lost with its executor is run again); None while Spark's
        status does not show every slot job still running yet (it follows events).

        Only running Spark jobs are compared with the slot threads still alive: Spark
        forgets finished jobs past ``spark.ui.retainedJobs``, so counting every job of
        the group would stop the copy job growing after that many slot jobs."""
        tracker = self._context().statusTracker()
        running = [
            info
            for spark_job in tracker.getJobIdsForGroup(f"srm-copy-{job_id}")
            if (info := tracker.getJobInfo(spark_job)) is not None and info.status == "RUNNING"
        ]
        if len(running) < sum(thread.is_alive() for thread in self._threads):
            return None
        remaining = 0
        for info in running:
            for stage_id in info.stageIds:
                stage = tracker.getStageInfo(stage_id)
                if stage is None:
                    return None  # not in Spark's status yet: ask again next time
                remaining += stage.numTasks - stage.numCompletedTasks
        return remaining

    def _submit(self, job_id: str, slots: list[int]) -> None:
        thread = threading.Thread(
            target=self._run,
            args=(job_id, slots),
            name=f"copy job {job_id} slots {slots[0]}-{slots[-1]}",
            daemon=True,
        )
        self._threads.append(thread)
        thread.start()

    def _run(self, job_id: str, slots: list[int]) -> None:
        context = self._context()
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
            context.parallelize(slots, len(slots)).foreachPartition(task)
        except Exception as exc:  # noqa: BLE001 - Spark's errors: reported, the service restarts
            if self.job_id == job_id:
                self.error = _first_line(exc)
            log.error("copy job %s ended: %s", job_id, _first_line(exc))

    def running(self) -> bool:
        """Some slot task of the job still runs and none failed (a failed one, with task
        retries off, failed its Spark job: the copy job is restarted whole)."""
        return self.error is None and any(thread.is_alive() for thread in self._threads)

    def cancel(self) -> None:
        """Ask Spark to kill the job's tasks (their slots stop their loops)."""
        if self.job_id is None:
            return
        try:
            self._context().cancelJobGroup(f"srm-copy-{self.job_id}")
        except Exception as exc:  # noqa: BLE001 - the JVM may be gone already
            log.info("cancelling the copy job: %s", _first_line(exc))

    def join(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)

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
