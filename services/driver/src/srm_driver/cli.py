"""`srm-driver`: run the replication tasks of a configuration until stopped."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from srm_common import telemetry
from srm_common.adapters.cluster_probe import refused_clusters
from srm_common.cli_support import exit_code, load_or_exit, parse_pairs, port, setup_logging
from srm_common.config.unsupported import unsupported_settings
from srm_common.errors import SrmError
from srm_common.shutdown import DRIVER_STOP_SECONDS, exit_within

EPILOG = """\
examples:
  srm-driver --config srm.yaml                  join the group: run the tasks the
                                                coordinator assigns (srm-coordinator)
  srm-driver --config srm.yaml --standalone     no coordinator: every enabled flow here
  srm-driver --config srm.yaml --target backup  only the flows into backup (one driver set
                                                per data centre: pin each to its own site)
  srm-driver --config srm.yaml --port 8081      per-flow REST on port 8081
  srm-driver --config mm2.properties            an MM2 properties file works as well
  srm-driver --config srm.yaml --spark-master spark://spark-master:7077 --host 10.0.0.5
                                                copy on a Spark cluster (its executors
                                                report to this driver at --host)
  srm-driver --config srm.yaml --set primary.bootstrap.servers=kafka-a:9092
                                                override one key of the file (repeatable)

Stop with Ctrl-C or SIGTERM: the copy slots finish what they sent and it is recorded
first (a second signal abandons it; the next start checks what landed and goes on).

Spark settings that would let Spark run a copy task twice (spark.task.maxFailures other
than 1, spark.speculation, local[N,R] with R retries) are refused.

environment:
  SRM_SPARK_MASTER   default for --spark-master (local[*])
  SRM_LOG_LEVEL      DEBUG, INFO (default), WARNING
"""


def main(argv: Sequence[str] | None = None) -> int:
    return exit_code(_run, argv)


def _run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    setup_logging()
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    config = load_or_exit("srm-driver", args.config, args.set)
    for line in (*config.warnings, *unsupported_settings(config)):
        logging.warning("%s", line)
    # Before anything local is checked: a refused login is what an operator must see first.
    refused = refused_clusters(config)  # wrong credentials or certificates: one line each
    if refused:
        print("\n".join(f"srm-driver: {line}" for line in refused), file=sys.stderr)
        return 2
    from srm_driver.bootstrap import build
    from srm_driver.settings import driver_settings

    try:
        spark_conf = parse_pairs(args.spark_conf, "--spark-conf", "spark.driver.memory=2g")
        settings = driver_settings(
            config,
            spark_master=args.spark_master,
            spark_conf=spark_conf,
            host=args.host,
            port=args.port,
            driver_id=args.id,
            standalone=args.standalone,
            token_file=args.token_file,
            target=args.target,
        )
        telemetry.setup("srm-driver", settings.driver_id)
        driver = build(settings)
    except (SrmError, ValueError) as exc:
        print(f"srm-driver: {exc}", file=sys.stderr)
        return 2
    assert driver.runtime is not None
    runtime = driver.runtime
    signals = {"count": 0}

    def on_signal(number: int, _frame: FrameType | None) -> None:
        signals["count"] += 1
        if signals["count"] > 1:
            logging.warning("second signal: abandoning what the copy slots still send")
            os._exit(130)
        logging.info("%s: stopping once the copy slots have finished", signal.Signals(number).name)
        exit_within(DRIVER_STOP_SECONDS, "srm-driver")
        runtime.stop.set()

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, on_signal)
    try:
        driver.run()
    except SrmError as exc:
        print(f"srm-driver: {exc}", file=sys.stderr)
        return 1
    finally:
        telemetry.current().shutdown()
    fatal = driver.source.fatal() if driver.source else None
    if fatal is not None:
        print(f"srm-driver: {fatal}", file=sys.stderr)
        return 3
    spark = runtime.copy.fatal()  # Spark, started beside the flows, could not start
    if spark is not None:
        print(f"srm-driver: {spark}", file=sys.stderr)
        return 2
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="srm-driver",
        description=(
            "Copy topics between Kafka clusters as configured: copy slots on Spark, heartbeats"
            " for every pair of clusters, per-flow REST status."
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
    parser.add_argument(
        "--id", help="this driver's member id (default: <host>-<random>); a restart may reuse it"
    )
    parser.add_argument(
        "--target",
        metavar="ALIAS[,ALIAS...]",
        help="run only the flows into these target clusters, coordinated in their logs"
        " (SRM's Driver Target Cluster; default: the key"
        " streams.replication.manager.driver.target.cluster, else every target)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="REST address, also where copy slots on Spark executors report (default: %(default)s)",
    )
    parser.add_argument(
        "--port", type=port, default=0, help="REST port (default: any free one, advertised)"
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="the token this driver bears to the coordinator leader (principal driver:<id>"
        " in the tokens file; default: $SRM_TOKEN_FILE)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a key of the configuration, in MM2 properties form (repeatable)",
    )
    return parser
