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
import os
import shlex
import signal
import sys
import time
from collections.abc import Sequence

from compose_read_model import check_aggregators, check_read_model
from compose_run import (
    DRIVERS,
    LOGGED_SERVICES,
    OTHER_DRIVERS,
    REMOTE,
    TOPIC,
    Compose,
    Run,
    StepFigures,
    compose_command,
    free_ports,
    get_json,
    poll,
    report,
)
from srm_harness.clients import SteadyProducer, consume_all, create_topic, list_topics
from srm_harness.compare import CopyCount, content, count_copy
from srm_harness.waits import wait_caught_up


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
