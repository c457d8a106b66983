"""Start a service that cannot outlive its launcher.

``python -m srm_local.guard LAUNCHER_PID -- COMMAND...`` asks the kernel to send this
process SIGTERM when its parent ends (``prctl(PR_SET_PDEATHSIG)``; it stays set across
``exec``), checks that the parent is still ``LAUNCHER_PID`` (the launcher may have ended
before the request), then becomes ``COMMAND`` (same pid, same process group). A launcher
killed with SIGKILL so takes its services with it: each gets SIGTERM and stops within its
bound (:mod:`srm_common.shutdown`), where before they ran on, orphaned, holding their ports.

The parent is the thread that started the child: the launcher starts services from its
main thread only.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Sequence

PR_SET_PDEATHSIG = 1


def guarded(launcher_pid: int, command: Sequence[str]) -> list[str]:
    """The command line that runs ``command`` under this guard for ``launcher_pid``."""
    return [sys.executable, "-m", "srm_local.guard", str(launcher_pid), "--", *command]


def main(argv: Sequence[str]) -> int:
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit():
        print("usage: python -m srm_local.guard LAUNCHER_PID -- COMMAND...", file=sys.stderr)
        return 2
    launcher, command = int(argv[0]), list(argv[2:])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
        error = os.strerror(ctypes.get_errno())
        print(f"srm_local.guard: prctl(PR_SET_PDEATHSIG) failed: {error}", file=sys.stderr)
        return 1
    if os.getppid() != launcher:
        print(f"srm_local.guard: launcher {launcher} has ended; not starting", file=sys.stderr)
        return 1
    os.execv(command[0], command)
    return 1  # not reached: exec replaces this process


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
