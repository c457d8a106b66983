"""`srm-driver`: run the replication workers of a configuration until stopped."""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from srm_common.cli_support import load_or_exit, parse_pairs, port, setup_logging
from srm_common.errors import SrmError

_SPARK_MASTER = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?|(spark|mesos)://\S+|k8s://\S+|yarn")

EPILOG = """\
examples:
  srm-driver --config srm.yaml                  join the group: run the tasks the
                                                coordinator assigns (srm-coordinator)
  srm-driver --config srm.yaml --standalone     no coordinator: every enabled flow here
  srm-driver --config srm.yaml --port 8081      per-flow REST on port 8081
  srm-driver --config mm2.properties            an MM2 properties file works as well
  srm-driver --config srm.yaml --spark-master spark://spark-master:7077
                                                run the copy jobs on a Spark cluster
  srm-driver --config srm.yaml --set primary.bootstrap.servers=kafka-a:9092
                                                override one key of the file (repeatable)

Stop with Ctrl-C or SIGTERM: running batches finish and are recorded first (a second
signal abandons them; the next start skips exactly what they already wrote).

environment:
  SRM_SPARK_MASTER   default for --spark-master (local[*])
  SRM_SPARK_JARS     Spark's Kafka connector jars, comma separated (default: `make jars`)
  SRM_LOG_LEVEL      DEBUG, INFO (default), WARNING
"""


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except SystemExit as exc:  # bad input: the message is printed already
        return exc.code if isinstance(exc.code, int) else 2


def _run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    setup_logging()
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    config = load_or_exit("srm-driver", args.config, args.set)
    from srm_driver.driver import Driver

    try:
        spark_conf = parse_pairs(args.spark_conf, "--spark-conf", "spark.driver.memory=2g")
    except ValueError as exc:
        print(f"srm-driver: {exc}", file=sys.stderr)
        return 2
    if not _SPARK_MASTER.fullmatch(args.spark_master):
        print(
            f"srm-driver: --spark-master {args.spark_master!r} is not a Spark master URL; use"
            " local[*], local[N], spark://HOST:PORT, k8s://https://HOST:PORT or yarn",
            file=sys.stderr,
        )
        return 2
    server = None
    try:
        if args.standalone:
            driver = Driver(config, spark_master=args.spark_master, spark_conf=spark_conf)
        else:
            from srm_common.adapters.http_server import HttpServer
            from srm_common.config.control import control_settings

            from srm_driver.coordinated import CoordinatedDriver
            from srm_driver.rest import create_app

            driver = CoordinatedDriver(
                config,
                control_settings(config),
                spark_master=args.spark_master,
                spark_conf=spark_conf,
                driver_id=args.id,
            )
            server = HttpServer(
                create_app(driver), host=args.host, port=args.port, name="srm-driver http"
            )
    except SrmError as exc:
        print(f"srm-driver: {exc}", file=sys.stderr)
        return 2
    signals = {"count": 0}

    def on_signal(number: int, _frame: FrameType | None) -> None:
        signals["count"] += 1
        if signals["count"] > 1:
            logging.warning("second signal: abandoning running batches")
            os._exit(130)
        logging.info("%s: stopping after the running batches", signal.Signals(number).name)
        driver.stop.set()

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, on_signal)
    try:
        if server is None:
            driver.start()
        else:
            server.start()
            driver.start_coordinated(server.url)  # type: ignore[attr-defined]
        driver.wait()
    except SrmError as exc:
        print(f"srm-driver: {exc}", file=sys.stderr)
        driver.shutdown()
        return 1
    finally:
        if server is not None:
            server.stop()
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="srm-driver",
        description=(
            "Copy topics between Kafka clusters as configured: one worker per flow, source"
            " tasks on Spark, heartbeats for every pair of clusters."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config",
        required=True,
        type=Path,
        help="srm.yaml or an MM2 properties file (see docs/configuration.md)",
    )
    parser.add_argument(
        "--spark-master",
        default=os.environ.get("SRM_SPARK_MASTER", "local[*]"),
        help="Spark master URL (default: %(default)s)",
    )
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting, e.g. spark.driver.memory=2g (repeatable)",
    )
    parser.add_argument(
        "--standalone",
        action="store_true",
        help="run every task of every enabled flow here, without a coordinator",
    )
    parser.add_argument("--id", help="this driver's member id (default: <host>-<random>)")
    parser.add_argument("--host", default="127.0.0.1", help="REST address (default: %(default)s)")
    parser.add_argument(
        "--port", type=port, default=0, help="REST port (default: any free one, advertised)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a key of the configuration, in MM2 properties form (repeatable)",
    )
    return parser
