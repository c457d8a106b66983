"""``srm-control partitions``: the partitions a driver halted (and records lost to
retention), listed from the flow's target log, and a resume from an explicit choice sent
to its leader."""

from __future__ import annotations

import argparse
import getpass
import socket
import uuid

from srm_common import telemetry
from srm_common.cli_support import fail
from srm_common.config.control import ControlPlane
from srm_common.config.model import SrmConfig
from srm_common.domain.resume import RESUME_MODES, ResumePoint

from srm_control import PROG
from srm_control.partition_listing import partition_lines
from srm_control.sending import Sender, print_outcome
from srm_control.target_log import flow_of, log_of, read_state


def run(args: argparse.Namespace, config: SrmConfig, plane: ControlPlane, sender: Sender) -> int:
    """``partitions``: resume one halted partition through the leader, then ``--list``."""
    flow = flow_of(args, config)
    settings = log_of(plane, flow)
    if args.resume is None and not args.list:
        fail(
            PROG,
            "say what to do: --list or --resume TOPIC:PARTITION --from ..."
            f" (see {PROG} partitions --help)",
        )
    if args.resume is not None:
        topic, sep, number = args.resume.rpartition(":")
        if not sep or not topic or not number.isdigit():
            fail(
                PROG,
                f"--resume {args.resume!r}: name the partition as TOPIC:PARTITION, e.g. orders:3",
            )
        if args.from_ is None:
            fail(PROG, f"--resume needs --from: one of {', '.join(RESUME_MODES)}")
        if (args.from_ == "offset") != (args.offset is not None):
            fail(PROG, "give --offset N exactly when resuming --from offset")
        try:
            point = ResumePoint.parse(args.from_, args.offset)
        except ValueError as exc:
            fail(PROG, f"--from {args.from_} --offset {args.offset}: {exc}")
        state = read_state(settings)
        body = {
            "flow": flow,
            "topic": topic,
            "partition": int(number),
            "mode": point.mode.value,
            "offset": point.offset,
            "by": f"{getpass.getuser()}@{socket.gethostname()} via srm-control"[:200],
            "request_id": uuid.uuid4().hex,
        }
        with telemetry.span(f"{PROG} partitions --resume", attributes={"srm.flow": flow}):
            resumed = sender.send(state, settings, "/v1/commands/resume", body, args.timeout)
        print_outcome(resumed, flow, [args.resume])
    if args.list:
        limit = None if args.all else args.limit
        for line in partition_lines(read_state(settings), flow, limit=limit, topic=args.topic):
            print(line)
    return 0
