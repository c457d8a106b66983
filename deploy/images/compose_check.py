"""`make test-containers`: the compose stack of docker-compose.yml, end to end, from the host.

Brings the stack up under a compose project of its own (``srm-ctest-<pid>``) with host
ports of its own (free loopback ports, never make up's 9092 / 9192 / 8080), so it runs
next to anyone's `make up` or `docker-compose up`. Then, with numbered records produced
to ``orders`` on ``primary`` from the host (~1500/s, ``srm_harness.clients.SteadyProducer``):

    step        under load                                          then
    1 driver    the stack as started                                stop producing, wait
    3 drivers   docker-compose up -d --scale driver-backup=3        until primary.orders on
    1 driver    docker-compose up -d --scale driver-backup=1        backup ends where orders
                                                                    ends, compare

The drivers scaled are backup's set (``driver-backup``, pinned to backup: they run
primary->backup); primary's set (``driver-primary``, one) runs the reverse flow
throughout, so the group counted on the gateway is backup's drivers and that one.

Each comparison reads both topics whole and wants every partition of the copy equal to
its source (keys, values, headers, timestamps, in order): 0 missing, 0 duplicated. The
gateway must answer ``/healthz`` and list both replications as running on
``/v2/replications``, and its read model must be PostgreSQL's: a command's audit entry
on ``/v1/audit`` and in ``srm_events``, closed metric windows in ``srm_metric_windows``,
and after ``docker-compose restart gateway`` the same audit trail and a topic's series.
The stack is taken down with its volumes (``down -v``) whatever happens, Ctrl-C and
SIGTERM included; on a failure the services' last log lines are printed first.

Run it with `make test-containers` (which builds the images first, `make images`) or
``.venv/bin/python deploy/images/compose_check.py --help`` once they exist.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from srm_harness.clients import SteadyProducer, consume_all, create_topic, end_offsets, list_topics
from srm_harness.compare import CopyCount, content, count_copy
from srm_harness.waits import wait_caught_up

ROOT = Path(__file__).resolve().parents[2]
# make up's ports (and the compose file's defaults): other engineers' stacks use them.
RESERVED_PORTS = frozenset({9092, 9192, 8080})
TOPIC = "orders"
REMOTE = "primary.orders"
AGGREGATORS = ("metrics-aggregator-primary", "metrics-aggregator-backup")
DRIVERS = "driver-backup"  # the set scaled: the drivers pinned to backup
OTHER_DRIVERS = 1  # driver-primary, pinned to primary, not scaled
LOGGED_SERVICES = (
    "coordinator-1",
    "coordinator-2",
    DRIVERS,
    "driver-primary",
    "gateway",
    "postgres",
    *AGGREGATORS,
)
# What the aggregators publish (srm_common.metrics.aggregate.AGGREGATED_TOPIC).
AGGREGATED_TOPIC = "srm-metrics-aggregated.internal"


@dataclass(frozen=True)
class StepFigures:
    """One step of the run: what was checked, how long it took, what the copy held."""

    name: str
    seconds: float
    produced: int | None = None
    found: int | None = None
    missing: int | None = None
    duplicated: int | None = None


def free_ports(count: int, *, avoid: Iterable[int] = RESERVED_PORTS) -> list[int]:
    """``count`` distinct free loopback ports, none of ``avoid`` (held open together, so
    the system does not hand out one twice)."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < count:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            held.append(sock)
            port = sock.getsockname()[1]
            if port not in avoid and port not in ports:
                ports.append(port)
    finally:
        for sock in held:
            sock.close()
    return ports


def compose_command(environ: dict[str, str] | None = None) -> list[str]:
    """SRM_COMPOSE if set, else Debian's docker-compose
    when installed, else the `docker compose` plugin."""
    chosen = (environ if environ is not None else os.environ).get("SRM_COMPOSE", "").strip()
    if chosen:
        return shlex.split(chosen)
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return ["docker", "compose"]


def report(steps: Sequence[StepFigures]) -> str:
    """The figures as a table, one step a line (counts blank where a step copies nothing)."""
    lines = [
        f"{'step':<36} {'time':>8} {'produced':>9} {'found':>9} {'missing':>8} {'duplicated':>10}"
    ]
    for step in steps:
        counts = [step.produced, step.found, step.missing, step.duplicated]
        cells = ["" if c is None else str(c) for c in counts]
        lines.append(
            f"{step.name:<36} {step.seconds:>6.1f} s {cells[0]:>9} {cells[1]:>9} {cells[2]:>8}"
            f" {cells[3]:>10}"
        )
    lines.append(f"{'total':<36} {sum(s.seconds for s in steps):>6.1f} s")
    return "\n".join(lines)


class Compose:
    """docker-compose (or `docker compose`) on the root's docker-compose.yml, as one
    project with its own ports."""

    def __init__(self, project: str, ports: dict[str, int], command: list[str]) -> None:
        self.project = project
        self.command = command
        self.env = {
            **os.environ,
            "SRM_PRIMARY_PORT": str(ports["primary"]),
            "SRM_BACKUP_PORT": str(ports["backup"]),
            "SRM_GATEWAY_PORT": str(ports["gateway"]),
        }

    def run(self, *args: str, capture: bool = False, check: bool = True) -> str:
        argv = [*self.command, "-p", self.project, "-f", str(ROOT / "docker-compose.yml"), *args]
        done = subprocess.run(
            argv,
            cwd=ROOT,
            env=self.env,
            text=True,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.STDOUT if capture else None,
            check=False,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{shlex.join(argv)} exited with {done.returncode}")
        return done.stdout or ""

    def containers(self, service: str) -> list[str]:
        return self.run("ps", "-q", service, capture=True).split()


class Run:
    """One run: the clock, progress lines and the figures of each step."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.steps: list[StepFigures] = []

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:7.1f} s] {text}", flush=True)


def get_json(url: str, timeout: float = 5) -> object:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def poll(predicate: Callable[[], object], timeout: float, what: str, step: float = 1.0) -> object:
    """``predicate()`` until it returns something true (errors count as not yet); that
    value, or TimeoutError naming ``what`` and the last error."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while True:
        try:
            value = predicate()
            if value:
                return value
            last = f"last answer: {value!r}"[:500]
        except Exception as exc:  # noqa: BLE001 - anything not ready yet is retried
            last = f"last error: {exc}"[:500]
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s ({last})")
        time.sleep(step)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scale",
        default="1,3,1",
        help="driver counts, one step each, the first as started (default 1,3,1)",
    )
    parser.add_argument(
        "--load-seconds",
        type=float,
        default=20,
        help="how long each step produces once its drivers are in the group (default 20)",
    )
    parser.add_argument("--partitions", type=int, default=4, help="partitions of orders")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.scale.split(",")]
    if not counts or min(counts) < 1:
        parser.error("--scale wants driver counts of 1 or more, e.g. 1,3,1")

    # SIGTERM (a CI timeout, kill) unwinds like Ctrl-C, so the stack still comes down;
    # once only: the same signal often comes twice (to the process group, and forwarded).
    def stop(*_: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.exit(143)

    signal.signal(signal.SIGTERM, stop)
    run = Run()
    ports = dict(zip(("primary", "backup", "gateway"), free_ports(3), strict=True))
    compose = Compose(f"srm-ctest-{os.getpid()}", ports, compose_command())
    run.say(
        f"compose project {compose.project} ({shlex.join(compose.command)}): primary"
        f" 127.0.0.1:{ports['primary']}, backup 127.0.0.1:{ports['backup']},"
        f" gateway http://127.0.0.1:{ports['gateway']}"
    )
    failed = True
    try:
        check_stack(run, compose, ports, counts, args.load_seconds, args.partitions)
        failed = False
    finally:
        # Nothing interrupts the teardown: a second signal (the group's, then the one the
        # wrapper forwards) must not leave the stack up.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if failed:
            run.say("FAILED: the services' last log lines follow")
            compose.run("logs", "--no-color", "--tail", "40", *LOGGED_SERVICES, check=False)
        begun = time.monotonic()
        run.say(f"docker-compose -p {compose.project} down -v")
        compose.run("down", "-v", "--remove-orphans", check=False)
        run.steps.append(StepFigures("down -v", time.monotonic() - begun))
        print("\n" + report(run.steps), flush=True)
        print(f"make test-containers: {'FAILED' if failed else 'passed'}", flush=True)
    return 0


def check_stack(
    run: Run,
    compose: Compose,
    ports: dict[str, int],
    counts: list[int],
    load_seconds: float,
    partitions: int,
) -> None:
    primary = f"127.0.0.1:{ports['primary']}"
    backup = f"127.0.0.1:{ports['backup']}"
    gateway = f"http://127.0.0.1:{ports['gateway']}"

    begun = time.monotonic()
    run.say(f"docker-compose up -d --scale {DRIVERS}={counts[0]} (waits for both clusters)")
    compose.run("up", "-d", "--scale", f"{DRIVERS}={counts[0]}")
    run.say("up returned; waiting for the gateway and the drivers to join")
    check_gateway(run, gateway, counts[0])
    up = f"up, {counts[0]} driver(s) in the group"
    run.steps.append(StepFigures(up, time.monotonic() - begun))

    create_topic(primary, TOPIC, partitions=partitions)
    run.say(f"created {TOPIC} ({partitions} partitions) on primary")
    sent = 0
    previous = counts[0]
    for index, drivers in enumerate(counts):
        begun = time.monotonic()
        producer = SteadyProducer(primary, TOPIC, partitions)
        producer.sent = sent  # numbering goes on from the last step: keys stay unique
        producer.start()
        if index == 0:
            name = f"{drivers} driver(s): first copy under load"
            run.say(f"producing to {TOPIC}; waiting for {REMOTE} on backup")
            poll(lambda: REMOTE in list_topics(backup), 180, f"{REMOTE} on backup")
            run.say(f"{REMOTE} exists on backup")
        else:
            name = f"{previous} -> {drivers} drivers under load"
            run.say(f"producing; docker-compose up -d --scale {DRIVERS}={drivers} --no-recreate")
            compose.run("up", "-d", "--scale", f"{DRIVERS}={drivers}", "--no-recreate")
            run.say(f"scale returned: {len(compose.containers(DRIVERS))} {DRIVERS} container(s)")
            wait_for_drivers(run, gateway, drivers)
        time.sleep(load_seconds)
        producer.finish()
        sent = producer.sent
        run.say(f"stopped producing at {sent} records; waiting until backup has caught up")
        wait_caught_up(primary, TOPIC, backup, REMOTE, 300)
        count = compare(primary, backup)
        seconds = time.monotonic() - begun
        run.steps.append(
            StepFigures(name, seconds, count.produced, count.found, count.missing, count.duplicated)
        )
        run.say(f"{name}: {count} ({seconds:.1f} s); every partition equal to its source")
        assert count.produced == sent, f"{sent} records sent but {count.produced} on {TOPIC}"
        previous = drivers

    begun = time.monotonic()
    check_gateway(run, gateway, counts[-1])
    check_aggregators(run, compose, {"primary": primary, "backup": backup})
    run.steps.append(StepFigures("gateway and aggregators", time.monotonic() - begun))
    begun = time.monotonic()
    check_read_model(run, compose, gateway)
    run.steps.append(StepFigures("read model in PostgreSQL", time.monotonic() - begun))


def sql(compose: Compose, query: str) -> str:
    """``query``'s answer from the stack's PostgreSQL (psql over its socket, as postgres)."""
    return compose.run(
        "exec",
        "-T",
        "postgres",
        "psql",
        "-h",
        "/tmp",
        "-U",
        "postgres",
        "-d",
        "srm",
        "-tAc",
        query,
        capture=True,
    ).strip()


def check_read_model(run: Run, compose: Compose, gateway: str) -> None:
    """The gateway projects into PostgreSQL and answers history from it across a restart."""
    ready = get_json(f"{gateway}/readyz")
    model = ready["read_model"]  # type: ignore[index]
    assert model["status"] == "ok", f"/readyz: {ready}"
    assert "@postgres:5432/srm" in model["database"], f"/readyz: {ready}"
    marker = f"ctest-read-model-{os.getpid()}"
    # A command as an operator makes it: through the gateway, bearing srm-control's token.
    token_dir = Path(os.environ.get("SRM_HTTP_DIR", ROOT / ".run" / "compose" / "http"))
    token = (token_dir / "srm-control.token").read_text().strip()
    body = {"flow": "primary->backup", "kind": "topics", "action": "add", "patterns": [marker]}
    request = urllib.request.Request(
        f"{gateway}/v1/commands/patterns",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200, f"the command through the gateway: {response.status}"
    poll(
        lambda: marker in json.dumps(get_json(f"{gateway}/v1/audit")),
        60,
        "the command on the gateway's /v1/audit",
    )
    poll(
        lambda: (
            sql(compose, f"select count(*) from srm_events where summary like '%{marker}%'") == "1"
        ),
        60,
        "the command's row in PostgreSQL's srm_events, once",
    )
    # Closed windows are written once a minute has passed over a window (aggregator).
    windows = poll(
        lambda: int(sql(compose, "select count(*) from srm_metric_windows where level = 'topic'")),
        180,
        "closed topic windows in PostgreSQL's srm_metric_windows",
    )
    events = int(sql(compose, "select count(*) from srm_events"))
    run.say(f"PostgreSQL: {events} rows in srm_events, {windows} closed topic windows")
    compose.run("restart", "gateway")
    run.say("docker-compose restart gateway")
    poll(lambda: get_json(f"{gateway}/healthz"), 120, "the restarted gateway's /healthz")
    series = poll(
        lambda: [
            p
            for p in get_json(
                f"{gateway}/v2/topic-metrics/primary/backup/{TOPIC}/record-count?minutes=120"
            )["series"]  # type: ignore[index]
            if p["closed"]
        ],
        120,
        f"closed windows of {TOPIC} from the restarted gateway",
    )
    trail = poll(
        lambda: get_json(f"{gateway}/v1/audit?all=true&limit=10000"),
        60,
        "the restarted gateway's audit trail",
    )
    total = int(sql(compose, "select count(*) from srm_events"))
    assert marker in json.dumps(trail), "the restarted gateway lost the command's audit entry"
    once = f"select count(*) from srm_events where summary like '%{marker}%'"
    assert sql(compose, once) == "1", "the command's row is not there once after the restart"
    run.say(
        f"restarted gateway: {len(series)} closed windows of {TOPIC}, audit total"
        f" {trail['total']} (srm_events: {total} rows, none twice)"  # type: ignore[index]
    )


def check_aggregators(
    run: Run,
    compose: Compose,
    clusters: dict[str, str],
) -> None:
    """Each cluster's aggregator still runs, never restarted; how much it published is
    reported (its windows are the aggregator's own tests' business)."""
    for alias, bootstrap in clusters.items():
        service = f"metrics-aggregator-{alias}"
        ids = compose.containers(service)
        assert len(ids) == 1, f"{service}: {len(ids)} containers"
        state = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Status}} {{.RestartCount}}", ids[0]],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        if state != ["running", "0"]:
            run.say(f"{service}: state and restarts {state}; how its first run ended:")
            print(first_run_end(ids[0]), flush=True)
        assert state == ["running", "0"], f"{service}: state and restarts {state}"
        published = sum(end_offsets(bootstrap, AGGREGATED_TOPIC).values())
        run.say(f"{service}: running, no restart; {published} records on {AGGREGATED_TOPIC}")


def first_run_end(container: str, lines: int = 40) -> str:
    """The last ``lines`` log lines of a restarted container's first run: the failure's
    tail that ``docker-compose logs --tail`` no longer shows once the second run logged."""
    logs = subprocess.run(
        ["docker", "logs", container], capture_output=True, text=True, check=False
    )
    output = (logs.stdout + logs.stderr).splitlines()
    starts = [n for n, line in enumerate(output) if ": app " in line and " raw partitions" in line]
    end = starts[1] if len(starts) > 1 else len(output)
    return "\n".join(output[max(0, end - lines) : end])


def compare(primary: str, backup: str) -> CopyCount:
    """Both topics read whole; every partition of the copy equal to its source."""
    source = consume_all(primary, TOPIC, timeout=120)
    target = consume_all(backup, REMOTE, timeout=120)
    count = count_copy(source, target)
    assert count.missing == 0 and count.duplicated == 0, f"{REMOTE}: {count}"
    assert set(target) == set(source), f"partitions {sorted(target)} != {sorted(source)}"
    for partition, records in source.items():
        copy = target[partition]
        assert content(copy) == content(records), (
            f"{REMOTE}[{partition}] differs from {TOPIC}[{partition}]:"
            f" {len(copy)} records against {len(records)}"
        )
    return count


def wait_for_drivers(run: Run, gateway: str, drivers: int) -> None:
    """The drivers (every log, as the gateway reads them) are ``drivers`` of backup's set
    and primary's one, and every task of both replications is assigned."""
    begun = time.monotonic()

    def settled() -> object:
        members = get_json(f"{gateway}/v1/drivers")["drivers"]  # type: ignore[index]
        replications = get_json(f"{gateway}/v2/replications")["replications"]  # type: ignore[index]
        states = {f"{r['source']}->{r['target']}": r["status"] for r in replications}
        if len(members) == drivers + OTHER_DRIVERS and set(states.values()) == {"running"}:
            return members
        return None

    members = poll(settled, 240, f"{drivers} drivers in the group, every task assigned")
    tasks = ", ".join(f"{m['driver']}: {len(m['tasks'])}" for m in members)  # type: ignore[attr-defined]
    waited = time.monotonic() - begun
    run.say(f"{drivers} driver(s) in the group after {waited:.1f} s (tasks: {tasks})")


def check_gateway(run: Run, gateway: str, drivers: int) -> None:
    health = poll(lambda: get_json(f"{gateway}/healthz"), 180, "the gateway's /healthz")
    assert health == {"status": "ok"}, f"/healthz answered {health}"
    wait_for_drivers(run, gateway, drivers)
    replications = get_json(f"{gateway}/v2/replications")["replications"]  # type: ignore[index]
    flows = sorted(f"{r['source']}->{r['target']}" for r in replications)
    assert flows == ["backup->primary", "primary->backup"], f"/v2/replications: {flows}"
    halted = [r for r in replications if r.get("halted")]
    assert not halted, f"halted partitions: {halted}"
    run.say(f"gateway: /healthz ok; /v2/replications: {', '.join(flows)} running")


if __name__ == "__main__":
    sys.exit(main())
