"""`srm-api-gateway`: the HTTP entry point for people and tools, read from the event log."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from srm_common.adapters.http_server import HttpServer
from srm_common.cli_support import (
    add_config_arguments,
    exit_code,
    fail,
    load_or_exit,
    port,
    setup_logging,
)
from srm_common.config.control import control_settings
from srm_common.errors import ConfigError, SrmError

DEFAULT_PORT = 8080
EPILOG = """\
examples:
  srm-api-gateway --config srm.yaml                  http://127.0.0.1:8080/docs
  srm-api-gateway --config srm.yaml --port 9000
  curl http://127.0.0.1:8080/v2/replications
  curl http://127.0.0.1:8080/v2/replications/primary/backup/topics
  curl 'http://127.0.0.1:8080/v1/state?at=2026-11-20T09:30:00Z'
  curl http://127.0.0.1:8080/v2/topic-metrics/primary/backup/orders/replication-latency-ms-p99
  curl http://127.0.0.1:8080/metrics                 Prometheus exposition
  srm-api-gateway --config srm.yaml --token-file /etc/srm/gateway.token
  curl -H "Authorization: Bearer $(cat /etc/srm/gateway.token)" -d '{"flow":
    "primary->backup","kind":"topics","action":"add","patterns":["sales.*"]}'
    http://127.0.0.1:8080/v1/commands/patterns

It follows the event log on the control cluster (srm.control.cluster) as coordinators
and drivers do, and the aggregated metrics topic of every target cluster; /readyz says
when it has read the log to its end.

environment:
  SRM_LOG_LEVEL   DEBUG, INFO (default), WARNING
"""


def main(argv: Sequence[str] | None = None) -> int:
    return exit_code(_run, argv)


def _run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    setup_logging()
    config = load_or_exit("srm-api-gateway", args.config, args.set)
    try:
        settings = control_settings(config)
    except ConfigError as exc:
        fail("srm-api-gateway", str(exc))
    from srm_common.adapters.kafka_log import EventLogReader

    from srm_api_gateway.commands import read_token
    from srm_api_gateway.http_api import create_app
    from srm_api_gateway.log_view import LogView
    from srm_api_gateway.metric_store import MetricStore
    from srm_api_gateway.metrics_follower import MetricsFollower

    log_view = LogView(lambda: EventLogReader(settings, client_id="srm-api-gateway"))
    store = MetricStore()
    targets = sorted({flow.target for flow in config.flows.values()})
    follower = MetricsFollower(
        {alias: ",".join(config.clusters[alias].bootstrap_servers) for alias in targets}, store
    )
    try:
        token = read_token(args.token_file) if args.token_file else None
        app = create_app(config, log_view, store, follower.status, token)
        server = HttpServer(app, host=args.host, port=args.port, name="srm-api-gateway")
    except SrmError as exc:
        fail("srm-api-gateway", str(exc))
    stop = threading.Event()

    def on_signal(_number: int, _frame: FrameType | None) -> None:
        stop.set()

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, on_signal)
    log_view.start()
    follower.start()
    server.start()
    print(f"srm-api-gateway: API at {server.url} (OpenAPI at {server.url}/docs)", file=sys.stderr)
    logging.info("following the event log %s on %s", settings.events_topic, settings.cluster)
    try:
        stop.wait()
    finally:
        server.stop()
        follower.close()
        log_view.close()
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="srm-api-gateway",
        description="Serve replications, clusters, drivers and the audit trail over HTTP"
        " (SRM's Service API v2), read from the event log.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address (default: %(default)s)")
    parser.add_argument(
        "--port", type=port, default=DEFAULT_PORT, help="HTTP port (default: %(default)s)"
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="a file holding the token that commands must bear (Authorization: Bearer ...);"
        " without it the gateway takes no commands",
    )
    return parser
