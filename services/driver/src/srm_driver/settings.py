"""Everything a driver is started with, validated once, before anything connects.

From the command line (``--config``, ``--spark-master``...), the environment
(``SRM_SPARK_MASTER``, ``SRM_DRIVER_JARS``) and the configuration file. A bad value is
one :class:`~srm_common.errors.ConfigError` (or :class:`SparkSetupError`) naming it and
saying what would be valid.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from srm_common.config.control import ControlPlane, control_plane, pinned_targets
from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.errors import ConfigError

from srm_driver.spark import check_spark_settings, driver_jars


@dataclass(frozen=True)
class DriverSettings:
    """A driver's validated settings."""

    config: SrmConfig
    # The logs of the targets this driver serves (every target, unless pinned).
    control: ControlPlane
    spark_master: str
    spark_conf: Mapping[str, str]
    jars: tuple[Path, ...]
    host: str
    port: int
    driver_id: str
    standalone: bool
    # (partitions, replication factor) of mm2-offsets.<S>.internal per flow.
    progress_topics: Mapping[str, tuple[int, int]]
    # The token this driver bears to the leader (else $SRM_TOKEN_FILE).
    token_file: Path | None = None
    # Which copy slot runs the copy loops: the Python one (issue 20's decision) or the JVM's.
    copier: str = "python"
    # The target clusters it is pinned to (--target, SRM's Driver Target Cluster); None:
    # every target.
    pinned: tuple[str, ...] | None = None

    @property
    def flows(self) -> dict[str, FlowConfig]:
        """The flows this driver runs tasks of: those into the targets it serves."""
        return {
            flow.name: flow
            for flow in self.config.flows.values()
            if self.pinned is None or flow.target in self.pinned
        }


def driver_settings(
    config: SrmConfig,
    *,
    spark_master: str,
    spark_conf: Mapping[str, str],
    jars_folder: str | None,
    host: str,
    port: int,
    driver_id: str | None,
    standalone: bool,
    token_file: Path | None = None,
    target: str | None = None,
) -> DriverSettings:
    """``target``: ``--target A,B`` (else SRM's Driver Target Cluster key)."""
    check_spark_settings(spark_master, spark_conf)
    copier = copier_choice(config)
    pinned = pinned_targets(config, target)
    return DriverSettings(
        config=config,
        control=control_plane(config).serving(pinned),
        pinned=pinned,
        spark_master=spark_master,
        spark_conf=dict(spark_conf),
        jars=tuple(driver_jars(jars_folder)) if copier == "jvm" else (),
        host=host,
        port=port,
        driver_id=driver_id or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}",
        standalone=standalone,
        token_file=token_file,
        copier=copier,
        progress_topics={
            flow.name: (
                _int_setting(config, flow, "offset.storage.partitions", 25, minimum=1),
                _int_setting(config, flow, "offset.storage.replication.factor", -1, minimum=1),
            )
            for flow in config.flows.values()
        },
    )


COPIERS = ("jvm", "python")


def copier_choice(config: SrmConfig) -> str:
    """``srm.copier`` (top level), else ``$SRM_COPIER``, else ``python``: which copy slot
    copies (both speak the same protocol; ``make bench`` measured them side by side and
    the Python slot won, docs/design.md section 3a)."""
    raw = config.extra.get("srm.copier") or os.environ.get("SRM_COPIER") or "python"
    value = raw.strip().lower()
    if value not in COPIERS:
        raise ConfigError(
            f"srm.copier = {raw!r}: expected jvm (Kafka's Java clients in Spark's JVM) or"
            " python (librdkafka in PySpark's Python workers), e.g. srm.copier = python",
            source=config.source,
            key="srm.copier",
        )
    return value


def _int_setting(
    config: SrmConfig, flow: FlowConfig, key: str, default: int, *, minimum: int
) -> int:
    """A Connect worker key (``offset.storage.*``): flow or top level, else the target
    cluster's ``<alias>.<key>``, else ``default``. Connect does not validate these for
    MM2's keys, so this does, before anything starts."""
    raw = flow.extra.get(key) or config.cluster(flow.target).extra.get(key)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = None
    if value is None or (value < minimum and value != -1):
        raise ConfigError(
            f"{key} = {raw!r} for flow {flow.name}: expected a whole number >= {minimum} (or"
            f" -1 for the broker's default), e.g. {key} = {max(default, 1)}",
            source=config.source,
            key=key,
        )
    return value
