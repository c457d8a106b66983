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

from srm_common.config import load_config
from srm_common.errors import ConfigError, SrmError

_SPARK_MASTER = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?|(spark|mesos)://\S+|k8s://\S+|yarn")

EPILOG = """\
examples:
  srm-driver --config srm.yaml                  every enabled flow of srm.yaml
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
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("SRM_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        config = load_config(args.config, overrides=_pairs(args.set, "--set", "tasks.max=4"))
    except ConfigError as exc:
        print(f"srm-driver: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"srm-driver: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"srm-driver: cannot read {args.config}: {exc.strerror}", file=sys.stderr)
        return 2
    from srm_driver.driver import Driver

    try:
        spark_conf = _pairs(args.spark_conf, "--spark-conf", "spark.driver.memory=2g")
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
    try:
        driver = Driver(config, spark_master=args.spark_master, spark_conf=spark_conf)
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
        driver.start()
        driver.wait()
    except SrmError as exc:
        print(f"srm-driver: {exc}", file=sys.stderr)
        driver.shutdown()
        return 1
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
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a key of the configuration, in MM2 properties form (repeatable)",
    )
    return parser


def _pairs(items: Sequence[str], option: str, example: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{option} {item!r}: expected KEY=VALUE, e.g. {option} {example}")
        pairs[key.strip()] = value.strip()
    return pairs
