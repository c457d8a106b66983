"""exit_within: a process told to stop ends at its bound even when its stop hangs."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

HANGS_ON_STOP = """
import signal, threading, time
from srm_common.shutdown import exit_within

def on_term(_n, _f):
    exit_within(1, "test")
    threading.Event().wait()  # a stop that never finishes (a Kafka client with no cluster)

signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
time.sleep(600)
"""


def test_process_ends_by_sigalrm_at_its_bound_when_its_stop_hangs() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", HANGS_ON_STOP], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(60)  # bounded: without the alarm it would hang for 600 s
    finally:
        process.kill()
    print(f"ended {time.monotonic() - started:.1f} s after SIGTERM (bound 1 s)")
    assert code == -signal.SIGALRM


def test_second_call_keeps_the_first_deadline() -> None:
    script = (
        "import signal\n"
        "from srm_common.shutdown import exit_within\n"
        "exit_within(30, 'a'); exit_within(1, 'b')\n"
        "print(signal.alarm(0))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert int(out.stdout) in (29, 30), out.stdout
