"""Everything a driver is started with, validated once, before anything connects.

From the command line (``--config``, ``--spark-master``...), the environment
(``SRM_SPARK_MASTER``) and the configuration file. A bad value is
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

from srm_driver.spark import check_spark_settings


@dataclass(frozen=True)
class DriverSettings:
    """A driver's validated settings."""

    config: SrmConfig
    # The logs of the targets this driver serves (every target, unless pinned).
    control: ControlPlane
    spark_master: str
    spark_conf: Mapping[str, str]
    host: str
    port: int
    driver_id: str
    standalone: bool
    # (partitions, replication factor) of mm2-offsets.<S>.internal per flow.
    progress_topics: Mapping[str, tuple[int, int]]
    # The token this driver bears to the leader (else $SRM_TOKEN_FILE).
    token_file: Path | None = None
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
    host: str,
    port: int,
    driver_id: str | None,
    standalone: bool,
    token_file: Path | None = None,
    target: str | None = None,
) -> DriverSettings:
    """``target``: ``--target A,B`` (else SRM's Driver Target Cluster key)."""
    check_spark_settings(spark_master, spark_conf)
    check_copier(config)
    pinned = pinned_targets(config, target)
    return DriverSettings(
        config=config,
        control=control_plane(config).serving(pinned),
        pinned=pinned,
        spark_master=spark_master,
        spark_conf=dict(spark_conf),
        host=host,
        port=port,
        driver_id=driver_id or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}",
        standalone=standalone,
        token_file=token_file,
        progress_topics={
            flow.name: (
                _int_setting(config, flow, "offset.storage.partitions", 25, minimum=1),
                _int_setting(config, flow, "offset.storage.replication.factor", -1, minimum=1),
            )
            for flow in config.flows.values()
        },
    )


def check_copier(config: SrmConfig) -> None:
    """``srm.copier`` (top level) or ``$SRM_COPIER``, kept from when two copy slots were
    measured side by side (issue 20): ``python`` is accepted (it is the only slot), and
    ``jvm`` is one message, because a configuration asking for the removed slot should
    not silently run another one. Nothing has connected yet when this refuses."""
    for raw, key in (
        (config.extra.get("srm.copier"), "srm.copier"),
        (os.environ.get("SRM_COPIER"), "$SRM_COPIER"),
    ):
        if raw is None or not raw.strip() or raw.strip().lower() == "python":
            continue
        removed = raw.strip().lower() == "jvm"
        raise ConfigError(
            f"{key} = {raw!r}: "
            + (
                "the JVM copy slot was removed (the copy loop is Python: librdkafka in"
                " PySpark's workers, docs/design.md section 3a)"
                if removed
                else "the only copy slot is python"
            )
            + f"; remove {key} (or set it to python)",
            source=config.source if key == "srm.copier" else "environment",
            key=key,
        )


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
