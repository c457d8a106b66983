"""`srm-metrics-aggregator`: fold one cluster's raw metrics into windowed aggregates."""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from collections.abc import Sequence

from srm_common import telemetry
from srm_common.adapters.cluster_probe import refused_clusters
from srm_common.cli_support import (
    add_config_arguments,
    exit_code,
    fail,
    load_or_exit,
    setup_logging,
)
from srm_common.errors import ConfigError
from srm_common.shutdown import SERVICE_STOP_SECONDS, exit_within

PROG = "srm-metrics-aggregator"

EPILOG = """\
examples:
  srm-metrics-aggregator --config srm.yaml --cluster backup
  srm-metrics-aggregator --config srm.yaml --cluster backup --set srm.metrics.windows=10s,1m

Run one per target cluster; more instances of the same cluster share its raw partitions
(same srm.metrics.aggregator.id). A restart resumes from the changelogs; see
docs/aggregator.md.

environment:
  SRM_LOG_LEVEL   DEBUG, INFO (default), WARNING
"""


def main(argv: Sequence[str] | None = None) -> int:
    return exit_code(_run, argv)


def _run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    setup_logging()
    telemetry.setup(PROG)
    config = load_or_exit(PROG, args.config, args.set)
    from srm_metrics_aggregator.settings import aggregator_settings

    try:
        settings = aggregator_settings(config, args.cluster)
    except ConfigError as exc:
        fail(PROG, str(exc))
    for line in refused_clusters(config, [settings.cluster]):  # wrong credentials, certificates
        fail(PROG, line)
    from srm_metrics_aggregator.bootstrap import build, prepare

    try:
        partitions, factor = prepare(settings)
    except Exception as exc:  # any failure: one line, not a traceback
        fail(PROG, f"cannot prepare {settings.cluster}'s raw metrics topic: {exc}", status=1)
    datadir = args.data_dir or tempfile.mkdtemp(prefix="srm-metrics-aggregator-")
    app = build(settings, partitions=partitions, replication_factor=factor, datadir=datadir)
    logging.info(
        "%s: app %s on %s (%s), %d raw partitions, windows %s ms, grace %d ms",
        PROG,
        settings.app_id,
        settings.cluster,
        ",".join(settings.bootstrap_servers),
        partitions,
        ",".join(str(w) for w in settings.folds.windows),
        settings.folds.grace_ms,
    )
    worker = _worker_class()(
        app, loglevel=os.environ.get("SRM_LOG_LEVEL", "INFO").upper(), quiet=True
    )
    worker.execute_from_commandline()  # returns by SystemExit
    return 0


def _worker_class() -> type:
    """Faust's worker, bounded when it stops: its own graceful stop closes Kafka clients
    and, with the cluster gone, waited for them past 40 s. The first SIGTERM or SIGINT
    arms :func:`exit_within`, then Faust stops as it always does."""
    import faust

    class BoundedWorker(faust.Worker):  # type: ignore[misc]
        def _on_sigterm(self) -> None:
            exit_within(SERVICE_STOP_SECONDS, PROG)
            super()._on_sigterm()

        def _on_sigint(self) -> None:
            exit_within(SERVICE_STOP_SECONDS, PROG)
            super()._on_sigint()

    return BoundedWorker


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Fold the raw replication metrics of one cluster into tumbling windows"
        " (per partition, topic, group, flow and cluster) and publish them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_arguments(parser)
    parser.add_argument("--cluster", required=True, help="the alias whose raw metrics to fold")
    parser.add_argument("--data-dir", help="Faust's data folder (default: a new temporary folder)")
    return parser
