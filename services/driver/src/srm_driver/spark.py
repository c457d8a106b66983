"""The Spark side of the driver: the session its copy slots run in.

The slots are Python (:mod:`srm_driver.copier`, in PySpark's Python workers): Spark's
JVM needs no jar of ours and no Kafka client.

Spark must never run a copy task twice on its own (a re-run slot would copy a range
again): task retries and speculation are refused at start-up, whatever the settings say.
So is dynamic allocation (docs/design.md, section 3d): the slots follow the executors.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from srm_common.errors import ConfigError, SrmError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

_MASTER = re.compile(
    r"local(\[(?P<threads>\*|\d+)(,\s*(?P<retries>\d+))?\])?"
    r"|(spark|mesos)://\S+|k8s://\S+|yarn"
)


class SparkSetupError(SrmError):
    """Spark cannot be set up; the message says what to install or set."""


def check_spark_settings(master: str, conf: Mapping[str, str]) -> None:
    """Refuse a master or settings that let Spark re-run or duplicate a copy task."""
    match = _MASTER.fullmatch(master)
    if match is None:
        raise ConfigError(
            f"--spark-master {master!r} is not a Spark master URL; use local[*], local[N],"
            " spark://HOST:PORT, k8s://https://HOST:PORT or yarn",
            source="command line",
        )
    retries = match.group("retries")
    if retries is not None and int(retries) != 1:
        raise ConfigError(
            f"--spark-master {master!r} lets Spark retry a failed task {retries} times; a"
            " retried copy task would write its records again. Use"
            f" local[{match.group('threads')}]",
            source="command line",
        )
    failures = conf.get("spark.task.maxFailures")
    if failures is not None and failures.strip() != "1":
        raise ConfigError(
            f"spark.task.maxFailures={failures} lets Spark run a failed copy task again,"
            " which would write its records twice; the driver restarts copying itself"
            " after reconciling. Remove the setting (the driver sets 1)",
            source="--spark-conf",
        )
    kill_idle = conf.get("spark.python.worker.killOnIdleTimeout", "false").strip().lower()
    if kill_idle != "false":
        raise ConfigError(
            "spark.python.worker.killOnIdleTimeout would kill a Python copy slot, which sends"
            " nothing back to Spark while it copies; remove the setting",
            source="--spark-conf",
        )
    dynamic = conf.get("spark.dynamicAllocation.enabled", "false").strip().lower()
    if dynamic != "false":
        raise ConfigError(
            "spark.dynamicAllocation.enabled would size the copy job's executors by pending"
            " tasks and idle time, which long-lived copy slots never have; the driver runs a"
            " slot on every core it is given and follows executors added or removed by hand,"
            " a cluster manager or an autoscaler (docs/design.md, section 3d). Remove the"
            " setting; give cores with spark.cores.max or spark.executor.instances",
            source="--spark-conf",
        )
    speculation = conf.get("spark.speculation", "false").strip().lower()
    if speculation != "false":
        raise ConfigError(
            f"spark.speculation={conf['spark.speculation']} would run a second copy of a slow"
            " copy task beside the first; remove the setting",
            source="--spark-conf",
        )


def driver_address_defaults(master: str) -> dict[str, str]:
    """Where Spark's driver listens unless the environment says: loopback in local mode
    (the executors are threads of this JVM); on a cluster, Spark's own choice (the
    address of this host's name: a container's or pod's IP), because executors on other
    machines connect back to it. ``SPARK_LOCAL_IP`` or ``--spark-conf spark.driver.host=``
    still choose."""
    return {"SPARK_LOCAL_IP": "127.0.0.1"} if master.startswith("local") else {}


def spark_environment(master: str) -> None:
    """The environment Spark reads at its start, set unless already set (before any other
    thread runs: the C library's environment is not safe to change beside readers)."""
    for key, value in driver_address_defaults(master).items():
        os.environ.setdefault(key, value)
    # Python workers (the copy slots) run this very environment: its packages
    # (confluent-kafka, srm_driver) are the ones the slots import. On a cluster the same
    # path must exist on every worker (the driver image, docs/scaling.md).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def spark_session(
    master: str,
    *,
    jars: Sequence[Path] = (),
    app_name: str = "srm-driver",
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A session for the copy slots (``jars``: extra jars on Spark's class path, which the
    driver needs none of); task retries and speculation off."""
    spark_environment(master)
    from pyspark.sql import SparkSession

    check_spark_settings(master, conf or {})
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    if jars:
        builder = builder.config("spark.jars", ",".join(str(jar) for jar in jars))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    builder = (
        builder.config("spark.task.maxFailures", "1")
        .config("spark.speculation", "false")
        .config("spark.dynamicAllocation.enabled", "false")
    )
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - PySpark raises plain runtime errors here
        raise SparkSetupError(
            f"Spark did not start with master {master!r}: {str(exc).strip().splitlines()[0]};"
            " check --spark-master and that the Spark cluster is reachable"
        ) from exc
    session.sparkContext.setLogLevel("ERROR")
    return session


def stop_session(session: SparkSession) -> None:
    """Stop Spark and its JVM. The JVM may already be gone (a signal to the whole process
    group reached it too); then there is nothing left to stop."""
    gateway = session.sparkContext._gateway
    try:
        session.stop()
        gateway.shutdown()
    except Exception as exc:  # noqa: BLE001 - Py4J errors when the JVM died first
        log.info("Spark's JVM was already gone at shutdown (%s)", type(exc).__name__)
    process = getattr(gateway, "proc", None)
    if process is not None:
        process.terminate()
        process.wait(30)


class SparkStart:
    """Spark started on a thread of its own, so that the driver does what needs no Spark
    meanwhile: a flow's internal and remote topics are created while Spark's JVM starts
    (15-20 s on a busy 2-core machine), and a target broker that creates thousands of
    new partitions a few dozen a second starts on them that much sooner. The copy job
    waits for :meth:`session`; a Spark that cannot start stops the driver with the
    reason (:meth:`srm_driver.copying.service.CopyService.fatal`)."""

    def __init__(self, master: str, start: Callable[[], SparkSession]) -> None:
        """``start`` builds the session (:func:`spark_session`); nothing runs until
        :meth:`begin`."""
        self.master = master
        self._start = start
        self._begun = False
        self._session: SparkSession | None = None
        self._error: str | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spark start", daemon=True)

    @classmethod
    def running(cls, session: SparkSession) -> SparkStart:
        """A session started elsewhere (tests share one): ready, and left running."""
        started = cls(str(session.sparkContext.master), lambda: session)
        started._session = session
        started._done.set()
        return started

    def begin(self) -> SparkStart:
        log.info("starting Spark (%s)", self.master)
        spark_environment(self.master)  # here, before the thread: see spark_environment
        self._begun = True
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self._session = self._start()
            log.info("Spark started (%s)", self.master)
        except SparkSetupError as exc:
            self._error = str(exc)
        except Exception as exc:  # noqa: BLE001 - reported, the driver stops with it
            self._error = f"Spark did not start with master {self.master!r}: {exc}"
        finally:
            self._done.set()

    def session(self) -> SparkSession | None:
        """The session once Spark is up, None while it starts; raises
        :class:`SparkSetupError` when it could not start."""
        if not self._done.is_set():
            return None
        if self._error is not None:
            raise SparkSetupError(self._error)
        return self._session

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the Spark this started (once its start ended, waiting ``timeout`` at most)."""
        if not self._begun:
            return  # a session started elsewhere: not ours to stop
        self._done.wait(timeout)
        if self._session is not None:
            stop_session(self._session)
