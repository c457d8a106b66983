"""The flow a command names (--source, --target) and the event log that holds it, read
and replayed: one line and exit 2 (bad flags) or 1 (the log cannot be read) otherwise."""

from __future__ import annotations

import argparse

from srm_common.adapters.event_log_reads import read_log
from srm_common.cli_support import fail
from srm_common.config.control import ControlPlane, ControlSettings
from srm_common.config.model import SrmConfig
from srm_common.control.state import ControlState, replay
from srm_common.errors import SrmError

from srm_control import PROG


def read_state(settings: ControlSettings) -> ControlState:
    try:
        return replay(read_log(settings, timeout=15))
    except SrmError as exc:
        fail(PROG, str(exc), status=1)


def log_of(plane: ControlPlane, flow: str) -> ControlSettings:
    settings = plane.log_of(flow)
    if settings is None:
        fail(PROG, f"no replication {flow} is configured")
    return settings


def flow_of(args: argparse.Namespace, config: SrmConfig) -> str:
    for alias in (args.source, args.target):
        if alias not in config.clusters:
            fail(
                PROG, f"unknown cluster alias {alias!r}; known aliases: {', '.join(config.aliases)}"
            )
    if args.source == args.target:
        fail(PROG, "--source and --target must be different clusters")
    return f"{args.source}->{args.target}"
