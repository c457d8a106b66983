"""The driver process: a worker per enabled flow, heartbeats for every pair, one Spark.

Until the coordinator lands, a driver plans its own tasks from the configuration (the
same planning functions the coordinator will call) and runs all of them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.errors import SrmError

from srm_driver.heartbeats import HeartbeatEmitter
from srm_driver.worker import FlowWorker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


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
        raise SrmError(
            f"{config.source}: {key} = {raw!r} for flow {flow.name}: expected a whole number"
            f" >= {minimum} (or -1 for the broker's default), e.g. {key} = {max(default, 1)}"
        )
    return value


class Driver:
    """Owns the Spark session, the flow workers and the heartbeat thread."""

    def __init__(
        self,
        config: SrmConfig,
        *,
        spark_master: str,
        spark_conf: Mapping[str, str] | None = None,
        standalone: bool = True,
    ) -> None:
        self.config = config
        self.spark_master = spark_master
        self.spark_conf = dict(spark_conf or {})
        self.stop = threading.Event()
        self.session: SparkSession | None = None
        self.workers: list[FlowWorker] = []
        # One emitter per ordered pair with heartbeats, each on its own thread.
        self.heartbeat_emitters: dict[str, HeartbeatEmitter] = (
            {
                flow.name: HeartbeatEmitter(flow, self.stop)
                for flow in config.flows.values()
                if flow.emit_heartbeats_enabled
            }
            if standalone
            else {}
        )
        # Emitters told to stop (their pair moved to another driver), joined at shutdown.
        self.halted_emitters: list[HeartbeatEmitter] = []
        # (partitions, replication factor) of mm2-offsets.<S>.internal per enabled flow,
        # checked now so that a bad value stops the driver before Spark starts.
        self._progress_topic = {
            flow.name: (
                _int_setting(config, flow, "offset.storage.partitions", 25, minimum=1),
                _int_setting(config, flow, "offset.storage.replication.factor", -1, minimum=1),
            )
            for flow in config.flows.values()
            if flow.enabled or not standalone
        }

    def start(self) -> None:
        """Start Spark (when a flow is enabled), every worker and the heartbeats."""
        enabled = self.config.enabled_flows()
        if enabled:
            from srm_driver.spark import spark_session

            log.info("starting Spark (%s)", self.spark_master)
            self.session = spark_session(self.spark_master, conf=self.spark_conf)
        for flow in enabled:
            worker = FlowWorker(
                flow,
                self.session,  # type: ignore[arg-type]
                self.stop,
                progress_partitions=self._progress_topic[flow.name][0],
                progress_replication_factor=self._progress_topic[flow.name][1],
            )
            self.workers.append(worker)
            worker.start()
        for emitter in self.heartbeat_emitters.values():
            emitter.start()
        flows = ", ".join(flow.name for flow in enabled) or "none"
        log.info(
            "driver running: flows copying: %s; heartbeats: %d pairs",
            flows,
            len(self.heartbeat_emitters),
        )

    def wait(self) -> None:
        """Block until ``stop`` is set, then let every worker finish its batch."""
        while not self.stop.wait(0.5):
            pass
        self.shutdown()

    def shutdown(self, timeout: float = 120.0) -> None:
        self.stop.set()
        for worker in self.workers:
            worker.join(timeout)
            if worker.is_alive():
                log.warning("%s: batch still running at shutdown; abandoning it", worker.name)
        deadline = time.monotonic() + 10  # one deadline for all: some may hang on a write
        for emitter in [*self.heartbeat_emitters.values(), *self.halted_emitters]:
            emitter.join(max(0.0, deadline - time.monotonic()))
        if self.session is not None:
            from srm_driver.spark import stop_session

            stop_session(self.session)
            self.session = None
        log.info("driver stopped")
