"""`srm-coordinator`: follow the event log, lead when elected, serve the command API."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from srm_common import telemetry
from srm_common.adapters.cluster_probe import refused_clusters
from srm_common.adapters.http_auth import listener_security
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
from srm_common.config.unsupported import unsupported_settings
from srm_common.errors import ConfigError, SrmError
from srm_common.shutdown import SERVICE_STOP_SECONDS, exit_within

EPILOG = """\
examples:
  srm-coordinator --config srm.yaml                    one instance (leads at once)
  srm-coordinator --config srm.yaml --port 8090 --id c1
  srm-coordinator --config srm.yaml --port 8091 --id c2   a standby: leads if c1 dies
  srm-coordinator --config srm.yaml --id c1 --state-file /var/lib/srm/c1.json

Several instances may run; the one holding the election group's partition leads and
fences any previous leader. State is the event log srm-control.events.internal on the
control cluster (srm.control.cluster, default: the first alias): a restart replays it.
The coordinator writes no SQL: the gateway projects the log into its read model. It
remembers only which log it followed (--state-file), to report a lost log after a
restart instead of starting an empty one.

Every POST needs a principal: a bearer token of the tokens file (srm.http.tokens.file,
else $SRM_HTTP_TOKENS_FILE) or a client certificate (listeners = https://... with
listeners.https.ssl.client.auth); see docs/security.md.

environment:
  SRM_LOG_LEVEL          DEBUG, INFO (default), WARNING
  SRM_HTTP_TOKENS_FILE   the tokens file when the configuration names none
"""


def main(argv: Sequence[str] | None = None) -> int:
    return exit_code(_run, argv)


def _run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    setup_logging()
    config = load_or_exit("srm-coordinator", args.config, args.set)
    for line in (*config.warnings, *unsupported_settings(config)):
        logging.warning("%s", line)
    try:
        settings = control_settings(config)
    except ConfigError as exc:
        fail("srm-coordinator", str(exc))
    for line in refused_clusters(config):  # wrong credentials or certificates
        fail("srm-coordinator", line)
    from srm_coordinator.bootstrap import build
    from srm_coordinator.http_api import create_app
    from srm_coordinator.log_memory import LogMemory

    if args.projection is not None and args.projection != "none":
        logging.warning(
            "--projection is ignored: the SQL read model is the gateway's now"
            " (srm-api-gateway --db-url); this coordinator remembers its log in --state-file"
        )
    state_file = args.state_file or f"srm-coordinator-{args.id or 'coordinator'}.json"
    if args.projection == "none":  # the old way of saying "no memory"
        state_file = "none"
    try:
        memory = None
        if state_file != "none":
            memory = LogMemory(Path(state_file), settings.events_topic)
        coordinator = build(
            config,
            settings,
            coordinator_id=args.id,
            memory=memory,
            apply_config=args.apply_config,
        )
        # Before the app: its middleware and command metrics take their meter from it.
        telemetry.setup("srm-coordinator", coordinator.id)
        access, tls = listener_security(config.extra)
        server = HttpServer(
            create_app(coordinator, access),
            host=args.host,
            port=args.port,
            name="srm-coordinator http",
            access=access,
            tls=tls,
        )
    except SrmError as exc:
        fail("srm-coordinator", str(exc))

    def on_signal(_number: int, _frame: FrameType | None) -> None:
        exit_within(SERVICE_STOP_SECONDS, "srm-coordinator")
        coordinator.stop.set()

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, on_signal)
    server.start()
    print(f"srm-coordinator {coordinator.id}: API at {server.url}", file=sys.stderr, flush=True)
    try:
        coordinator.run(server.url)
    except SrmError as exc:
        fail("srm-coordinator", str(exc), status=1)
    finally:
        server.stop()
        telemetry.current().shutdown()
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="srm-coordinator",
        description="Validate commands, decide task configs and assignments, append them"
        " to the event log; one instance leads, the others stand by.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_arguments(parser)
    parser.add_argument("--id", help="this instance's name (default: coordinator-<random>)")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address (default: %(default)s)")
    parser.add_argument(
        "--port", type=port, default=0, help="HTTP port (default: any free one; logged)"
    )
    parser.add_argument(
        "--state-file",
        metavar="FILE",
        help="where this coordinator remembers which event log it followed (default:"
        " srm-coordinator-<id>.json in the working directory; 'none': no memory, a lost"
        " log is then not noticed across a restart)",
    )
    # Before the gateway owned the read model: 'none' still means no memory; a URL is
    # ignored with a warning.
    parser.add_argument("--projection", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--apply-config",
        action="store_true",
        help="when leading, make this file the log's configuration baseline even if it"
        " differs from the one applied before (default: a differing file is reported on"
        " /v1/leader and not applied, so coordinators with different files never flip"
        " the configuration at each take-over)",
    )
    return parser
