"""Clean stops of the local stack, measured: what docs/local-stack.md promises, shown.

    .venv/bin/python deploy/local/stop_rounds.py --rounds 5     # about 2 minutes a round

Each round: ``srm-local up`` with two drivers, a producer writing to ``load`` on primary,
driver-1's process group paused 20 s (SIGSTOP) and resumed, then ``srm-local down``;
printed: how long ``down`` took, its exit code, and how many processes of the stack are
still alive after it (recorded process groups, cluster pids, the launcher, anything whose
command line names the run folder) and ports still held. After the rounds ``srm-local
up`` runs once more on the same ports; then, with the launcher paused and both clusters
killed (SIGKILL), an aggregator, the gateway and a coordinator each get SIGTERM: seconds
until each exited.

Uses the ports in SRM_PRIMARY_PORT, SRM_BACKUP_PORT, SRM_SERVICE_PORT, SRM_GATEWAY_PORT
(defaults otherwise) and this checkout's run folder. Not part of `make test`: it takes
minutes and starts the whole stack repeatedly.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from srm_local.clusters import find_clusters
from srm_local.paths import project_root, run_dir
from srm_local.stopping import (
    command_line,
    group_members,
    port_holder,
    recorded_services,
    stack_ports,
)

BIN = Path(sys.executable).parent


def start_stack() -> tuple[subprocess.Popen[bytes], Path]:
    log = run_dir().parent / f".stop-rounds-up-{int(time.time())}.log"
    process = subprocess.Popen(
        [str(BIN / "srm-local"), "up"],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "SRM_DRIVERS": "2"},
    )
    deadline = time.monotonic() + 300
    while "Ctrl-C here" not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"srm-local up did not start (see {log})")
        time.sleep(0.5)
    return process, log


def drivers_copying(timeout: float = 180) -> None:
    """Until both drivers logged a copy report (their slots run)."""
    deadline = time.monotonic() + timeout
    folder = run_dir() / "services"
    while time.monotonic() < deadline:
        texts = [(folder / f"driver-{i}.log").read_text(errors="replace") for i in (1, 2)]
        if all("started the heartbeat task" in t for t in texts):
            return
        time.sleep(1)
    print("  (the drivers had not both started their tasks in 180 s; going on)")


class Load(threading.Thread):
    """About 1 MB/s of 1 kB records to ``load`` on primary until stopped."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": bootstrap})
        if "load" not in admin.list_topics(timeout=10).topics:
            admin.create_topics([NewTopic("load", 3, 1)])["load"].result(30)
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.stop = threading.Event()
        self.sent = 0

    def run(self) -> None:
        value = b"x" * 1000
        while not self.stop.wait(0.01):
            for _ in range(10):
                self.producer.produce("load", value=value)
                self.sent += 1
            self.producer.poll(0)
        self.producer.flush(10)
        del self.producer  # no client left retrying a cluster that is about to stop


def stack_processes(groups: dict[str, int], clusters: dict[str, int], launcher: int) -> list[str]:
    alive = []
    for name, pgid in groups.items():
        alive += [f"{name} pid {pid}" for pid in group_members(pgid)]
    alive += [f"kafka {a} pid {p}" for a, p in clusters.items() if p in group_members(p)]
    if launcher and group_members(launcher):
        alive.append(f"launcher pid {launcher}")
    marker = str(run_dir())
    seen = {line.split(" pid ")[1] for line in alive}
    for entry in Path("/proc").iterdir():
        if (
            entry.name.isdigit()
            and entry.name not in seen
            and marker in command_line(int(entry.name))
        ):
            alive.append(f"pid {entry.name} ({command_line(int(entry.name))[:100]})")
    return alive


def one_round(number: int) -> tuple[float, int, int, int]:
    launcher, log = start_stack()
    primary = f"127.0.0.1:{os.environ.get('SRM_PRIMARY_PORT', '9092')}"
    drivers_copying()
    load = Load(primary)
    load.start()
    time.sleep(10)
    driver = next(s for s in recorded_services() if s.name == "driver-1")
    os.killpg(driver.pid, signal.SIGSTOP)
    time.sleep(20)
    os.killpg(driver.pid, signal.SIGCONT)
    time.sleep(5)
    load.stop.set()
    load.join()
    services = recorded_services()
    clusters = [c for c in find_clusters(run_dir()) if c.pid() is not None]
    groups = {s.name: s.pid for s in services}
    cluster_pids = {c.alias: c.pid() or 0 for c in clusters}
    ports = stack_ports(services, clusters)
    started = time.monotonic()
    down = subprocess.run([str(BIN / "srm-local"), "down"], capture_output=True, text=True)
    took = time.monotonic() - started
    launcher.wait(30)
    alive = stack_processes(groups, cluster_pids, launcher.pid)
    held = [f"{port} {whose}: {port_holder(port)}" for port, whose in ports if port_holder(port)]
    print(
        f"round {number}: {len(services)} services, {len(clusters)} clusters, {load.sent} records"
        f" produced, driver-1 paused 20 s; make down took {took:.1f} s (exit {down.returncode});"
        f" stack processes alive after it: {len(alive)}; ports held: {len(held)}",
        flush=True,
    )
    for line in [*alive, *held, *down.stdout.splitlines()[-3:]]:
        print(f"    {line}")
    log.unlink(missing_ok=True)
    return took, down.returncode, len(alive), len(held)


def sigterm_with_clusters_gone() -> None:
    launcher, log = start_stack()
    drivers_copying()
    time.sleep(15)  # the aggregators have joined their groups
    os.kill(launcher.pid, signal.SIGSTOP)  # so it does not stop the stack when clusters go
    try:
        for cluster in find_clusters(run_dir()):
            pid = cluster.pid()
            if pid:
                os.kill(pid, signal.SIGKILL)
        print("clusters killed (SIGKILL); services left 5 s without them", flush=True)
        time.sleep(5)
        chosen = {s.name: s for s in recorded_services()}
        names = ["aggregator-backup", "gateway", "coordinator-1"]
        sent = {}
        for name in names:
            os.kill(chosen[name].pid, signal.SIGTERM)
            sent[name] = time.monotonic()
        exited: dict[str, float] = {}
        while len(exited) < len(names) and time.monotonic() - min(sent.values()) < 60:
            for name in names:
                if name not in exited and not group_members(chosen[name].pid):
                    exited[name] = time.monotonic() - sent[name]
            time.sleep(0.05)
        for name in names:
            seconds = f"{exited[name]:.1f} s" if name in exited else "still running after 60 s"
            print(f"  {name}: SIGTERM to exit {seconds}", flush=True)
    finally:
        os.kill(launcher.pid, signal.SIGCONT)
        subprocess.run([str(BIN / "srm-local"), "down"], capture_output=True, text=True)
        launcher.wait(120)
        log.unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.chdir(project_root())
    results = [one_round(n + 1) for n in range(args.rounds)]
    launcher, log = start_stack()
    print("make up again on the same ports: started", flush=True)
    subprocess.run([str(BIN / "srm-local"), "down"], capture_output=True, text=True)
    launcher.wait(120)
    log.unlink(missing_ok=True)
    sigterm_with_clusters_gone()
    alive = sum(r[2] + r[3] for r in results)
    worst = max(r[0] for r in results)
    print(
        f"{len(results)} rounds: stack processes or ports left after make down: {alive};"
        f" slowest make down {worst:.1f} s"
    )
    return 0 if alive == 0 and all(r[1] == 0 for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
