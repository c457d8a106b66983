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

from srm_common import telemetry
from srm_common.adapters.cluster_probe import refused_clusters
from srm_common.cli_support import (
    add_config_arguments,
    exit_code,
    fail,
    load_or_exit,
    port,
    setup_logging,
)
from srm_common.config.control import control_plane
from srm_common.errors import ConfigError, SrmError
from srm_common.shutdown import SERVICE_STOP_SECONDS, exit_within

DEFAULT_PORT = 8080
DEFAULT_DB = "srm-gateway.db"
EPILOG = """\
examples:
  srm-api-gateway --config srm.yaml                  http://127.0.0.1:8080/docs
  srm-api-gateway --config srm.yaml --port 9000
  srm-api-gateway --config srm.yaml --db-url postgresql+psycopg://srm:PASSWORD@db/srm
  srm-api-gateway --config srm.yaml --db-url postgresql+psycopg://srm@db/srm \\
    --db-password-file /run/secrets/srm-db-password
  curl http://127.0.0.1:8080/v2/replications
  curl http://127.0.0.1:8080/v2/replications/primary/backup/topics
  curl 'http://127.0.0.1:8080/v1/state?at=2026-11-20T09:30:00Z'
  curl http://127.0.0.1:8080/v2/topic-metrics/primary/backup/orders/replication-latency-ms-p99
  curl http://127.0.0.1:8080/metrics                 Prometheus exposition
  srm-api-gateway --config srm.yaml --set srm.http.tokens.file=/etc/srm/http-tokens \
    --token-file /etc/srm/api-gateway.token
  curl -H "Authorization: Bearer $(cat ~/.srm/alice.token)" -d '{"flow":
    "primary->backup","kind":"topics","action":"add","patterns":["sales.*"]}'
    http://127.0.0.1:8080/v1/commands/patterns

Every POST needs a principal of the tokens file (or a client certificate): callers'
commands go to the coordinator leader on their behalf (see docs/security.md).

It follows the event log of every target cluster (the flows into it, kept there) as
coordinators and drivers do, the single log of an earlier release if there is one (its
history), and the aggregated metrics topic of every target cluster; /readyz says when it
has read the logs to their end (degraded while one cannot be read: its cluster is
down). Both are projected into its SQL read model (the audit trail, the current members,
assignments and halted partitions, closed metric windows), migrated with Alembic at
start: --db-url, default a SQLite file in --state-dir. A database that does not answer
at start is one line and exit 2.

environment:
  SRM_LOG_LEVEL          DEBUG, INFO (default), WARNING
  SRM_HTTP_TOKENS_FILE   the tokens file when the configuration names none
  SRM_TOKEN_FILE         the gateway's own token when --token-file is not given
"""


def main(argv: Sequence[str] | None = None) -> int:
    return exit_code(_run, argv)


def _run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    setup_logging()
    telemetry.setup("srm-api-gateway")
    config = load_or_exit("srm-api-gateway", args.config, args.set)
    try:
        plane = control_plane(config)
    except ConfigError as exc:
        fail("srm-api-gateway", str(exc))
    for line in refused_clusters(config):  # wrong credentials or certificates
        fail("srm-api-gateway", line)
    from srm_api_gateway.bootstrap import build

    try:
        url = args.db_url or _url_in(args.db_url_file)
        url = url or f"sqlite:///{(args.state_dir / DEFAULT_DB).resolve()}"
        if args.db_password_file is not None:
            url = with_password(url, args.db_password_file)
        gateway = build(
            config,
            plane,
            db_url=url,
            token_file=args.token_file,
            host=args.host,
            port=args.port,
        )
    except SrmError as exc:
        fail("srm-api-gateway", str(exc))
    stop = threading.Event()

    def on_signal(_number: int, _frame: FrameType | None) -> None:
        exit_within(SERVICE_STOP_SECONDS, "srm-api-gateway")
        stop.set()

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, on_signal)
    gateway.start()
    address = gateway.server.url
    print(f"srm-api-gateway: API at {address} (OpenAPI at {address}/docs)", file=sys.stderr)
    logging.info("following the logs of %s", ", ".join(plane.targets))
    try:
        stop.wait()
    finally:
        gateway.close()
    return 0


def _url_in(path: Path | None) -> str | None:
    if path is None or not path.exists():
        return None
    return _one_line_in(path, "--db-url-file", "URL")


def with_password(url: str, path: Path) -> str:
    """``url`` with the password read from ``path``; SrmError naming the file if unreadable."""
    from sqlalchemy import make_url
    from sqlalchemy.exc import ArgumentError

    password = _one_line_in(path, "--db-password-file", "password")
    try:
        return make_url(url).set(password=password).render_as_string(hide_password=False)
    except (ArgumentError, ValueError) as exc:
        raise SrmError(f"--db-url is not a database URL ({exc}); e.g. sqlite:///srm.db") from exc


def _one_line_in(path: Path, flag: str, what: str) -> str:
    """The database ``what`` kept in the file ``flag`` names; SrmError naming the file."""
    try:
        value = path.read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SrmError(f"cannot read {flag} {path}: {exc}") from exc
    if not value:
        raise SrmError(f"{flag} {path} is empty; put the database {what} in it")
    return value


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
        "--db-url",
        metavar="URL",
        help="SQLAlchemy URL of the read model: sqlite:///PATH or"
        " postgresql+psycopg://USER:PASSWORD@HOST/DB (default: sqlite in --state-dir)",
    )
    parser.add_argument(
        "--db-url-file",
        type=Path,
        metavar="FILE",
        help="read --db-url from FILE when FILE exists (a Kubernetes Secret that may be"
        " absent: without it, the default SQLite file)",
    )
    parser.add_argument(
        "--db-password-file",
        type=Path,
        metavar="FILE",
        help="a file holding the database password (kept out of the URL, the process"
        " list and the logs)",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(),
        metavar="DIR",
        help=f"where the default read model ({DEFAULT_DB}) lives (default: the working directory)",
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="the gateway's own token, borne when it relays a command to the coordinator"
        " leader (principal api-gateway in the tokens file; default: $SRM_TOKEN_FILE)."
        " Callers authenticate with the tokens file (srm.http.tokens.file)",
    )
    return parser
