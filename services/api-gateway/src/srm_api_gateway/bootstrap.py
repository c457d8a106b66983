"""The composition root: every adapter of a gateway built from its validated settings.

Nothing else in the gateway builds a client: the event logs' readers (one per target's
log, through a :class:`~srm_common.log_follower.LogFollower`), the aiokafka consumers of
the aggregated metrics (a factory :class:`MetricsFollower` calls per cluster and retry),
the HTTP client credentials it relays commands with, the read model's database and the
HTTP server. :mod:`srm_api_gateway.cli` parses the command line, builds a
:class:`Gateway` here and runs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from srm_common.adapters.event_log_reader import EventLogReader
from srm_common.adapters.http_auth import listener_security
from srm_common.adapters.http_client import credentials
from srm_common.adapters.http_server import HttpServer
from srm_common.config.control import ControlPlane, ControlSettings
from srm_common.config.model import SrmConfig
from srm_common.log_follower import LogFollower, LogSet

from srm_api_gateway.http_api import create_app
from srm_api_gateway.metric_store import MetricStore
from srm_api_gateway.metrics_follower import MetricsFollower, consumer_options
from srm_api_gateway.read_model import ReadModel

if TYPE_CHECKING:
    from aiokafka import AIOKafkaConsumer


@dataclass
class Gateway:
    """A built gateway: nothing read or served until :meth:`start`."""

    read_model: ReadModel
    logs: LogSet
    follower: MetricsFollower
    server: HttpServer

    def start(self) -> None:
        self.read_model.start()
        self.logs.start()
        self.follower.start()
        self.server.start()

    def close(self) -> None:
        self.server.stop()
        self.follower.close()
        self.logs.close()
        self.read_model.close()


def metrics_consumer(alias: str, keys: Mapping[str, str]) -> AIOKafkaConsumer:
    """A consumer of ``alias``'s aggregated metrics (SrmError or ValueError when its
    security settings cannot be read)."""
    from aiokafka import AIOKafkaConsumer

    return AIOKafkaConsumer(**consumer_options(alias, keys))


def build(
    config: SrmConfig,
    plane: ControlPlane,
    *,
    db_url: str,
    token_file: Path | None,
    host: str,
    port: int,
) -> Gateway:
    """Every part of a gateway, wired (SrmError saying what is wrong when a part cannot
    be built: the database URL, the listener's or the relay's credentials)."""
    read_model = ReadModel(db_url)

    # The read model remembers the log it followed under each name: a replaced log is
    # reported lost. Every target's log, and the single log of an earlier release (its
    # history), if there is one.
    def follower(settings: ControlSettings) -> LogFollower:
        name = settings.name
        return LogFollower(
            lambda: EventLogReader(
                settings, client_id="srm-api-gateway", known_log=read_model.known_log(name)
            ),
            name=f"the log of {name}",
            on_fold=lambda folded: read_model.on_fold(name, folded),
            keep=True,
            optional=settings.legacy,
        )

    logs = LogSet({s.name: follower(s) for s in (*plane.logs.values(), plane.legacy)})
    store = MetricStore()
    targets = sorted({flow.target for flow in config.flows.values()})
    metrics = MetricsFollower(
        {alias: config.clusters[alias].client_config("consumer") for alias in targets},
        store,
        read_model.on_metric,
        consumer=metrics_consumer,
    )
    access, tls = listener_security(config.extra)
    relay = credentials(config.extra, token_file=token_file)
    app = create_app(
        config,
        logs,
        store,
        metrics.status,
        credentials=relay,
        read_model=read_model,
        access=access,
    )
    server = HttpServer(app, host=host, port=port, name="srm-api-gateway", access=access, tls=tls)
    return Gateway(read_model, logs, metrics, server)
