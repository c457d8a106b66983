"""`srm-coordinator`: follow the event log, lead when elected, serve the command API."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import uuid
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
from srm_common.config.control import control_plane, pinned_targets
from srm_common.config.unsupported import unsupported_settings
from srm_common.errors import ConfigError, SrmError
from srm_common.shutdown import SERVICE_STOP_SECONDS, exit_within

EPILOG = """\
examples:
  srm-coordinator --config srm.yaml                    one instance (leads at once)
  srm-coordinator --config srm.yaml --port 8090 --id c1
  srm-coordinator --config srm.yaml --port 8091 --id c2   a standby: leads if c1 dies
  srm-coordinator --config srm.yaml --id c1 --state-file /var/lib/srm/c1.json
  srm-coordinator --config srm.yaml --id dc2-c1 --target backup   only backup's log

Every target cluster holds the event log of the flows into it (srm-control.log.internal
there), with its own election and leader: a coordinator serves the log of every target
of the configuration (or those of --target, or of the key
streams.replication.manager.driver.target.cluster), each on its own thread, so a cluster
that is down holds up only its own log. Several instances may run; for each log, the one
holding its election partition leads and fences any previous leader. A restart replays
the logs. The first leader of a log moves the configuration of its flows from the
single log of an earlier release (srm-control.events.internal on srm.control.cluster),
if there is one. The coordinator writes no SQL: the gateway projects the logs into its
read model. It remembers only which logs it followed (--state-file), to report a lost
log after a restart instead of starting an empty one.

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
        plane = control_plane(config)
        targets = pinned_targets(config, args.target)
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
    coordinator_id = args.id or f"coordinator-{uuid.uuid4().hex[:8]}"
    try:
        memory = None
        if state_file != "none":
            topics = {s.name: s.events_topic for s in plane.serving(targets).logs.values()}
            memory = LogMemory(Path(state_file), topics)
        site = build(
            config,
            plane,
            coordinator_id=coordinator_id,
            targets=targets,
            memory=memory,
            apply_config=args.apply_config,
        )
        # Before the app: its middleware and command metrics take their meter from it.
        telemetry.setup("srm-coordinator", coordinator_id)
        access, tls = listener_security(config.extra)
        server = HttpServer(
            create_app(site, access),
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
        site.stop.set()

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, on_signal)
    server.start()
    served = ", ".join(site.logs)
    print(
        f"srm-coordinator {coordinator_id}: API at {server.url} (serves the logs of {served})",
        file=sys.stderr,
        flush=True,
    )
    try:
        site.run(server.url)
    finally:
        server.stop()
        telemetry.current().shutdown()
    if site.failure is not None:
        fail("srm-coordinator", site.failure, status=1)
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
    parser.add_argument(
        "--target",
        metavar="ALIAS[,ALIAS...]",
        help="serve only the logs of these target clusters (default: SRM's key"
        " streams.replication.manager.driver.target.cluster, else every target)",
    )
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
