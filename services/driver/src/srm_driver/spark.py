"""The Spark side of the driver: the session, the connector jars, our JVM copier.

Spark's Kafka source reads the ranges; ``RangeCopier`` (Java, in ``jvm/``, compiled here
on first use against the installed PySpark and the connector's kafka-clients) writes them,
because Spark 4.0's Kafka sink drops the timestamp column. The jar is cached by a hash of
its source and class path, so a changed source or an upgraded Spark rebuilds it.

Environment:
    SRM_SPARK_JARS      comma list of Spark's Kafka connector jars (default: the jars
                        ``make jars`` fetched, when this runs from the project)
    SRM_DRIVER_CACHE    where the compiled copier jar is kept
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from srm_common.errors import SrmError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

_JAVA_ROOT = Path(__file__).parent / "jvm"
COPIER_CLASS = "srm.driver.RangeCopier"


class SparkSetupError(SrmError):
    """Spark or the copier jar cannot be set up; the message says what to install or set."""


def connector_jars() -> list[Path]:
    """Spark's Kafka connector and its dependencies (kafka-clients, commons-pool2...)."""
    listed = os.environ.get("SRM_SPARK_JARS", "").strip()
    if listed:
        jars = [Path(item.strip()) for item in listed.split(",") if item.strip()]
    else:
        try:
            from srm_local.jars import spark_connector_jars
        except ImportError:
            raise SparkSetupError(
                "SRM_SPARK_JARS is not set: list the jars of"
                " org.apache.spark:spark-sql-kafka-0-10_2.13 and its dependencies, comma separated"
            ) from None
        jars = spark_connector_jars()
    missing = [str(jar) for jar in jars if not jar.is_file()]
    if missing:
        raise SparkSetupError(f"connector jars not found: {', '.join(missing)}")
    return jars


def _cache_dir() -> Path:
    override = os.environ.get("SRM_DRIVER_CACHE")
    if override:
        return Path(override)
    try:
        from srm_local.paths import cache_dir
    except ImportError:
        return Path.home() / ".cache" / "srm-driver"
    return cache_dir() / "driver-jvm"


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def copier_jar(jars: list[Path]) -> Path:
    """The compiled copier jar, built now with ``javac`` when missing or stale."""
    sources = sorted(_JAVA_ROOT.rglob("*.java"))
    classpath = [str(_pyspark_jars() / "*"), *(str(jar) for jar in jars)]
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.read_bytes())
    digest.update("\n".join(sorted(p.name for p in _pyspark_jars().glob("*.jar"))).encode())
    digest.update("\n".join(sorted(jar.name for jar in jars)).encode())
    target = _cache_dir() / f"srm-copier-{digest.hexdigest()[:16]}.jar"
    if target.is_file():
        return target
    javac, jar_tool = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar_tool is None:
        raise SparkSetupError("javac and jar (a Java 17 JDK) are needed to build the copier")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        classes = Path(work) / "classes"
        command = [javac, "--release", "17", "-nowarn", "-d", str(classes)]
        compiled = subprocess.run(
            [*command, "-cp", os.pathsep.join(classpath), *map(str, sources)],
            capture_output=True,
            text=True,
            check=False,
        )
        if compiled.returncode != 0:
            raise SparkSetupError(f"building the copier failed:\n{compiled.stderr.strip()}")
        partial = Path(work) / "copier.jar"
        subprocess.run([jar_tool, "cf", str(partial), "-C", str(classes), "."], check=True)
        partial.replace(target)
    return target


def spark_session(
    master: str, *, app_name: str = "srm-driver", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """A session with the connector and the copier on its class path.

    Task retries and speculation are off: a re-run copy task would write its records
    again. The source task's loop retries whole batches after reconciling instead.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    jars = connector_jars()
    all_jars = [*jars, copier_jar(jars)]
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.jars", ",".join(str(jar) for jar in all_jars))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.task.maxFailures", "1")
        .config("spark.speculation", "false")
        .config("spark.sql.shuffle.partitions", "2")
        # Consumers and fetched data idle this long are dropped (default 5 minutes).
        .config("spark.kafka.consumer.cache.timeout", "60s")
        .config("spark.kafka.consumer.fetchedData.cache.timeout", "60s")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
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
    """Stop Spark and its JVM (cached producers keep dialling clusters otherwise).

    The JVM may already be gone (a signal to the whole process group reached it too);
    then there is nothing left to stop.
    """
    gateway = session.sparkContext._gateway
    try:
        session.sparkContext._jvm.srm.driver.RangeCopier.closeProducers()  # type: ignore[union-attr]
        session.stop()
        gateway.shutdown()
    except Exception as exc:  # noqa: BLE001 - Py4J errors when the JVM died first
        log.info("Spark's JVM was already gone at shutdown (%s)", type(exc).__name__)
    process = getattr(gateway, "proc", None)
    if process is not None:
        process.terminate()
        process.wait(30)
