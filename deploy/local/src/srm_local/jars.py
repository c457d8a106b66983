"""Official Apache Kafka and Spark-connector jars, fetched with Maven into the cache.

Two classpaths that never mix:

* ``kafka-<version>/``: broker, controller, Kafka's tools and MirrorMaker 2
  (``deploy/maven/kafka/pom.xml``);
* ``spark-kafka-<version>/``: Spark's Kafka source and sink at exactly the installed
  PySpark's version (``deploy/maven/spark-kafka/pom.xml``), because Spark's connector
  brings its own kafka-clients.

A folder is complete once its ``.complete`` marker exists; fetching writes to a temporary
folder first, so an interrupted download is never mistaken for a good one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from importlib import metadata
from pathlib import Path

from srm_local.paths import cache_dir, project_root

_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
_COMPLETE = ".complete"


class JarFetchError(RuntimeError):
    """Maven could not fetch the jars; the message says where its log is."""


def kafka_version() -> str:
    """The Kafka version declared in ``deploy/maven/kafka/pom.xml``."""
    return _pom_property(_pom("kafka"), "kafka.version")


def pyspark_version() -> str:
    """The installed PySpark's version, read from package metadata (no JVM started)."""
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError as exc:
        raise JarFetchError(
            "PySpark is not installed in this environment; run `make install` first"
        ) from exc


def kafka_jars_dir(version: str | None = None) -> Path:
    """Folder holding the Kafka runtime jars, fetched on first use.

    ``SRM_KAFKA_JARS_DIR`` points at an existing folder instead (no fetching). Another
    ``version`` than the pom's is an older broker for compatibility tests: only its
    broker jars (``deploy/maven/kafka-broker/pom.xml``), in ``kafka-broker-<version>/``.
    """
    if version is not None and version != kafka_version():
        return _ensure_fetched(
            _pom("kafka-broker"),
            cache_dir() / "jars" / f"kafka-broker-{version}",
            f"Apache Kafka {version} broker",
            {"kafka.version": version},
        )
    override = os.environ.get("SRM_KAFKA_JARS_DIR")
    if override:
        return Path(override)
    version = kafka_version()
    return _ensure_fetched(
        _pom("kafka"), cache_dir() / "jars" / f"kafka-{version}", f"Apache Kafka {version}", {}
    )


def kafka_classpath(version: str | None = None) -> str:
    """A ``java -cp`` value for the Kafka runtime jars (of ``version``, default the pom's)."""
    return str(kafka_jars_dir(version) / "*")


def spark_connector_jars() -> list[Path]:
    """Spark's Kafka connector jars that PySpark does not already ship.

    The connector's Maven closure repeats libraries PySpark bundles (Scala, Hadoop
    client, SLF4J...), sometimes at other versions; only the missing artifacts are
    returned, so Spark keeps its own copies.
    """
    version = pyspark_version()
    folder = _ensure_fetched(
        _pom("spark-kafka"),
        cache_dir() / "jars" / f"spark-kafka-{version}",
        f"Spark {version} Kafka connector",
        {"spark.version": version},
    )
    bundled = {_artifact_name(jar.name) for jar in _pyspark_jars_dir().glob("*.jar")}
    return sorted(jar for jar in folder.glob("*.jar") if _artifact_name(jar.name) not in bundled)


def fetch_all() -> None:
    """Fetch every jar the stack and its tests need (what ``make jars`` runs): Kafka's,
    and Spark's Kafka connector (only test_spark_kafka_connector.py uses it, to show why
    the driver does not). Nothing is compiled: the copy slots are Python."""
    kafka_jars_dir()
    spark_connector_jars()


def _pom(name: str) -> Path:
    return project_root() / "deploy" / "maven" / name / "pom.xml"


def _pom_property(pom: Path, name: str) -> str:
    node = ElementTree.parse(pom).getroot().find(f"m:properties/m:{name}", _POM_NS)
    if node is None or not (node.text or "").strip():
        raise JarFetchError(f"{pom}: property <{name}> is missing")
    return (node.text or "").strip()


def _pyspark_jars_dir() -> Path:
    distribution = metadata.distribution("pyspark")
    return Path(str(distribution.locate_file("pyspark/jars")))


def _artifact_name(file_name: str) -> str:
    """``kafka-clients-3.9.0.jar`` -> ``kafka-clients``: the name up to the version."""
    stem = file_name.removesuffix(".jar")
    parts = stem.split("-")
    for index, part in enumerate(parts):
        # The version is the first part shaped like "<digits>.<digits>..."; parts such as
        # "0" and "10_2.13" in spark-sql-kafka-0-10_2.13 belong to the name.
        if index and re.match(r"\d+\.\d+", part):
            return "-".join(parts[:index])
    return stem


def _ensure_fetched(pom: Path, target: Path, label: str, properties: dict[str, str]) -> Path:
    if (target / _COMPLETE).exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarFetchError("Maven (mvn) is not on the PATH; install Maven 3.8+ and retry")
    target.parent.mkdir(parents=True, exist_ok=True)
    log_path = target.parent / f"{target.name}.maven.log"
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    command = [
        mvn,
        "-B",
        "-gs",
        str(pom.parent.parent / "settings.xml"),
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={staging}",
        *(f"-D{key}={value}" for key, value in properties.items()),
    ]
    print(f"fetching {label} jars with Maven into {target} (first run only)...", flush=True)
    started = time.monotonic()
    with log_path.open("w") as log:
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        tail = "".join(log_path.read_text(errors="replace").splitlines(keepends=True)[-15:])
        raise JarFetchError(
            f"Maven could not fetch the {label} jars (exit {result.returncode}); "
            f"full log: {log_path}\n{tail}"
        )
    (staging / _COMPLETE).write_text(" ".join(command) + "\n")
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    count = len(list(target.glob("*.jar")))
    print(f"  {count} jars in {time.monotonic() - started:.1f} s", file=sys.stdout, flush=True)
    return target
