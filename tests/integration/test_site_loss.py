"""A lost site stops only its own flows: every replication is coordinated in its target
cluster, and each site's drivers are pinned to it.

Three clusters ``a``, ``b``, ``c`` (``a`` a cluster of this test, behind a TCP proxy so
that it can also be cut off the network; ``b`` and ``c`` the session's ``primary`` and
``backup``), flows ``a->b``, ``b->c``, ``c->a`` and ``b->a``, a numbered load on every
flow, one driver per site pinned to it (``--target``) and one coordinator per site, each
serving every target. Then:

1. **Site a killed** (its broker, its driver and its coordinator, SIGKILL) for
   ``SRM_SITE_LOSS_OUTAGE_S`` seconds (default 30; the figures in docs/design.md are of a
   run with 120). Meanwhile b->c keeps copying; then the b->c driver is killed and
   restarted under its id and gets its tasks back, and while it starts srm-control adds
   and denies patterns on b->c: each change is in c's log and its task configs within
   seconds; a new topic on b matching b->c is copied. Then a comes back (broker, driver,
   coordinator) and every flow catches up.
2. **Site a cut off the network** (the proxy drops everything, both ways) for
   ``SRM_SITE_LOSS_CUT_S`` seconds (default 20): b->c copies on and changes on it apply;
   after the cut every flow catches up.
3. Every flow compared in full: 0 lost, 0 doubled, nothing halted in any log.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from srm_common.control.state import ControlState
from srm_control import cli as control_cli
from srm_harness.clients import SteadyProducer, consume_all, create_topic, end_offsets, produce
from srm_harness.compare import CopyCount, content, count_copy
from srm_harness.control import ControlGroup, write_config
from srm_harness.processes import CoordinatorProcess, DriverProcess, log_tails
from srm_harness.records import Record
from srm_harness.waits import wait_caught_up, wait_until
from srm_local.clusters import ClusterSpec, LocalKafkaCluster
from srm_local.ports import free_ports

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 2
TIMINGS = {"srm.driver.session.timeout.ms": 6000, "srm.driver.write.timeout.ms": 4000}
OUTAGE_S = float(os.environ.get("SRM_SITE_LOSS_OUTAGE_S", "30"))
CUT_S = float(os.environ.get("SRM_SITE_LOSS_CUT_S", "20"))
SITES = ("a", "b", "c")


def _proxied_cluster(
    folder: Path, proxy_for: Callable[[int], object]
) -> tuple[LocalKafkaCluster, object]:  # type: ignore[no-untyped-def]
    """Cluster ``a``: clients reach it only through a proxy (its advertised listener);
    the broker talks to itself on a listener of its own, so a cut leaves it whole."""
    port, controller, internal = free_ports(3)
    proxy = proxy_for(port)
    spec = ClusterSpec(
        "a",
        port,
        controller_port=controller,
        properties={
            "listeners": f"PLAINTEXT://127.0.0.1:{port},INTERNAL://127.0.0.1:{internal},"
            f"CONTROLLER://127.0.0.1:{controller}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port},"  # type: ignore[attr-defined]
            f"INTERNAL://127.0.0.1:{internal}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,"
            "CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
        },
    )
    return LocalKafkaCluster(spec, folder), proxy


def _copied(bootstrap: str, remote: str) -> int:
    return sum(end_offsets(bootstrap, remote).values())


def _control(config: Path, *args: str) -> float:
    """srm-control with ``args``; how long until it said the change was applied."""
    started = time.monotonic()
    code = control_cli.main(["--config", str(config), *args])
    assert code == 0, f"srm-control {' '.join(args)}: exit {code}"
    return time.monotonic() - started


def _reached(target: str, remote: str, ends: dict[int, int]) -> bool:
    """Each partition of ``remote`` on ``target`` ends at or past ``ends`` (its source's
    ends at some moment: the copy keeps offsets)."""
    now = end_offsets(target, remote)
    return all(now.get(partition, 0) >= end for partition, end in ends.items())


def _planned(state: ControlState, flow: str) -> set[str]:
    tasks = state.tasks.get(flow)
    return {topic for task in (tasks.source if tasks else ()) for topic, _ in task.partitions}


def _exact(source: str, topic: str, target: str, remote: str) -> CopyCount:
    source_records = consume_all(source, topic)
    target_records = consume_all(target, remote)
    count = count_copy(source_records, target_records)
    assert (count.missing, count.duplicated) == (0, 0), f"{topic} -> {remote}: {count}"
    for partition, records in source_records.items():
        assert content(target_records[partition]) == content(records), (
            f"{remote}-{partition} is not an exact copy of {topic}-{partition}"
        )
    return count


def test_a_lost_site_stops_only_the_flows_that_touch_it(  # type: ignore[no-untyped-def]
    kafka, tmp_path, unique_name, tcp_proxy, capsys
):
    a, proxy = _proxied_cluster(tmp_path / "kafka-a", tcp_proxy)
    a.start(fresh=True)
    try:
        with capsys.disabled():
            _run(a, proxy, kafka, tmp_path, unique_name)
    finally:
        a.stop()


def _run(a, proxy, kafka, tmp_path, unique_name) -> None:  # type: ignore[no-untyped-def]
    servers = {"a": f"127.0.0.1:{proxy.port}", "b": kafka["primary"], "c": kafka["backup"]}
    prefix = unique_name("site")
    from_a = f"{prefix}-from-a"
    from_b = kafka.create_topic("primary", f"{prefix}-from-b", partitions=PARTITIONS)
    from_c = kafka.create_topic("backup", f"{prefix}-from-c", partitions=PARTITIONS)
    late = f"{prefix}-late"
    later = kafka.create_topic("primary", f"{late}-old", partitions=PARTITIONS)
    denied = kafka.create_topic("primary", f"{late}-tmp", partitions=1)
    fresh = f"{late}-new"
    for topic, count in ((later, 300), (denied, 100)):
        produce(
            servers["b"],
            topic,
            [Record(f"{topic}-{n}".encode(), f"{n}".encode()) for n in range(count)],
        )
    create_topic(servers["a"], from_a, partitions=PARTITIONS)
    kafka.created += [
        ("primary", f"a.{from_a}"),
        ("backup", f"b.{from_b}"),
        ("backup", f"b.{later}"),
        ("backup", f"b.{denied}"),
        ("backup", f"b.{fresh}"),
        ("primary", fresh),
    ]
    config = write_config(
        tmp_path,
        servers,
        flows={
            "a->b": {"enabled": True, "topics": [from_a], "groups": []},
            "b->c": {"enabled": True, "topics": [from_b], "groups": []},
            "c->a": {"enabled": True, "topics": [from_c], "groups": []},
            "b->a": {"enabled": True, "topics": [from_b], "groups": []},
        },
        replication={"tasks.max": PARTITIONS, "srm.control.topic.prefix": prefix, **TIMINGS},
    )
    for alias in ("primary", "backup"):
        for name in ("log", "beats", "leader"):
            kafka.created.append((alias, f"{prefix}.{name}.internal"))
    coordinators = {
        site: CoordinatorProcess(config, tmp_path / f"coordinator-{site}.log", f"c-{site}")
        for site in SITES
    }
    drivers = {
        site: DriverProcess(
            config,
            tmp_path / f"driver-{site}.log",
            spark_master="local[1]",
            args=["--id", f"driver-{site}", "--target", site],
        )
        for site in SITES
    }
    processes = [*coordinators.values(), *drivers.values()]
    logs = log_tails(processes, 2500)
    groups = {site: ControlGroup(config, site) for site in SITES}
    # ~200 records/s into each site (an eighth of the usual steady load): three drivers
    # and three clusters share two cores, the outage's backlog must catch up, and every
    # flow is compared in full at the end (at 500/s: 185,000 records a flow, minutes of
    # catching up and comparing that showed nothing more; docs/testing.md).
    producers = {
        site: SteadyProducer(servers[site], topic, PARTITIONS, per_tick=10)
        for site, topic in (("a", from_a), ("b", from_b), ("c", from_c))
    }
    # Records produced into a: by the steady producer, then in batches after each fault.
    sent_to_a = 0
    figures: list[str] = []

    def produce_into_a(count: int, tag: str) -> None:
        nonlocal sent_to_a
        produce(
            servers["a"],
            from_a,
            [Record(f"{tag}-{n}".encode(), f"{tag} {n}".encode()) for n in range(count)],
        )
        sent_to_a += count

    def every_flow_copies() -> bool:
        return all(
            _copied(target, remote) > 0
            for target, remote in (
                (servers["b"], f"a.{from_a}"),
                (servers["c"], f"b.{from_b}"),
                (servers["a"], f"c.{from_c}"),
                (servers["a"], f"b.{from_b}"),
            )
        )

    def caught_up(label: str) -> None:
        """Every flow of a holds what its source held now. The loads into b and c go on,
        so their copies pass those ends rather than stop at them: wait until each
        partition reached its end (exact equality is for a source no longer written)."""
        began = time.monotonic()
        for source, topic, target, remote, flow in (
            (servers["a"], from_a, servers["b"], f"a.{from_a}", "a->b"),
            (servers["b"], from_b, servers["a"], f"b.{from_b}", "b->a"),
            (servers["c"], from_c, servers["a"], f"c.{from_c}", "c->a"),
        ):
            ends = end_offsets(source, topic)
            wait_until(
                lambda target=target, remote=remote, ends=ends: _reached(target, remote, ends),
                600,
                f"{flow} holds what its source held when a came back",
                detail=logs,
            )
            figures.append(f"{label}: {flow} caught up {time.monotonic() - began:.1f} s after a")

    try:
        for process in processes:
            process.start()
        for producer in producers.values():
            producer.start()
        for site in SITES:
            wait_until(
                lambda site=site: groups[site].settled([f"driver-{site}"]),
                300,
                f"driver-{site} runs every task of {site}'s log",
                detail=logs,
            )
        wait_until(every_flow_copies, 240, "every flow copies", detail=logs)
        for site in SITES:
            state = groups[site].state()
            assert set(state.assignment.values()) == {f"driver-{site}"}, (
                f"only {site}'s driver runs the tasks of the flows into {site}"
            )

        # -- 1. site a killed ------------------------------------------------------------
        producers["a"].finish()
        sent_to_a += producers["a"].sent
        for process in (drivers["a"], coordinators["a"]):
            process.kill9()
        a_pid = a.pid()
        assert a_pid is not None
        os.kill(a_pid, signal.SIGKILL)
        proxy.refuse()  # a dead broker's port refuses connections
        killed = time.monotonic()
        into_c = (servers["c"], f"b.{from_b}")
        before = _copied(*into_c)
        wait_until(
            lambda: _copied(*into_c) > before,
            60,
            "b->c copies on, its driver running, once a is down",
            detail=logs,
            step=0.1,
        )

        # driver-c restarts (a new Spark, tens of seconds) while srm-control changes b->c:
        # each change is in c's log and its task configs whether c's driver runs or not.
        drivers["c"].kill9()
        restarted_at = time.monotonic()
        drivers["c"].start()
        added = _control(config, "topics", "--source", "b", "--target", "c", "--add", f"{late}-.*")
        wait_until(
            lambda: later in _planned(groups["c"].state(), "b->c"),
            60,
            "the added pattern is in b->c's task configs",
            detail=logs,
            step=0.1,
        )
        add_applied = time.monotonic() - killed
        deny_started = time.monotonic()
        denied_in = _control(
            config, "topics", "--source", "b", "--target", "c", "--add-blacklist", denied
        )
        wait_until(
            lambda: denied not in _planned(groups["c"].state(), "b->c"),
            60,
            "the denied topic leaves b->c's task configs",
            detail=logs,
            step=0.1,
        )
        deny_applied = time.monotonic() - deny_started

        wait_until(
            lambda: groups["c"].settled(["driver-c"]),
            300,  # a restart starts Spark again: the first start's bound
            "driver-c runs c's tasks again after its restart",
            detail=logs,
        )
        back_in = time.monotonic() - restarted_at

        create_topic(servers["b"], fresh, partitions=1)
        produce(
            servers["b"],
            fresh,
            [Record(f"new-{n}".encode(), f"new {n}".encode()) for n in range(500)],
        )
        created_at = time.monotonic()
        wait_until(
            lambda: _copied(servers["c"], f"b.{fresh}") >= 500,
            120,
            "the new topic on b is copied to c",
            detail=logs,
        )
        new_copied = time.monotonic() - created_at
        remaining = OUTAGE_S - (time.monotonic() - killed)
        if remaining > 0:
            time.sleep(remaining)
        during = _copied(*into_c) - before
        outage = time.monotonic() - killed
        assert during > 0, "b->c stopped while a was down\n" + logs()
        figures.append(
            f"a killed {outage:.0f} s: b->c copied {during} records meanwhile; srm-control"
            f" --add returned in {added:.1f} s and was in c's task configs"
            f" {add_applied:.1f} s after the kill; --add-blacklist returned in"
            f" {denied_in:.1f} s, out of the task configs {deny_applied:.1f} s after;"
            f" driver-c killed and restarted: its tasks back in {back_in:.1f} s; a new"
            f" topic on b: 500 records on c {new_copied:.1f} s after it was made"
        )

        proxy.listen()
        a.start()
        for process in (coordinators["a"], drivers["a"]):
            process.start()
        produce_into_a(500, "after-kill")
        caught_up("after the kill")

        # -- 2. site a cut off the network ----------------------------------------------
        proxy.cut()
        cut_at = time.monotonic()
        before = _copied(*into_c)
        cut_add = _control(
            config, "topics", "--source", "b", "--target", "c", "--remove-blacklist", denied
        )
        wait_until(
            lambda: denied in _planned(groups["c"].state(), "b->c"),
            60,
            "the removed deny entry is applied",
            detail=logs,
            step=0.1,
        )
        cut_applied = time.monotonic() - cut_at
        remaining = CUT_S - (time.monotonic() - cut_at)
        if remaining > 0:
            time.sleep(remaining)
        during_cut = _copied(*into_c) - before
        assert during_cut > 0, "b->c stopped while a was cut off\n" + logs()
        proxy.heal()
        figures.append(
            f"a cut off {time.monotonic() - cut_at:.0f} s: b->c copied {during_cut} records"
            f" meanwhile; --remove-blacklist returned in {cut_add:.1f} s, applied"
            f" {cut_applied:.1f} s after the cut"
        )
        produce_into_a(500, "after-cut")
        caught_up("after the cut")

        for site in ("b", "c"):
            producers[site].finish()
        wait_caught_up(servers["b"], from_b, servers["c"], f"b.{from_b}", 240, detail=logs)
        wait_caught_up(servers["b"], from_b, servers["a"], f"b.{from_b}", 240, detail=logs)
        wait_caught_up(servers["c"], from_c, servers["a"], f"c.{from_c}", 240, detail=logs)
        wait_caught_up(servers["b"], later, servers["c"], f"b.{later}", 240, detail=logs)
        wait_caught_up(servers["b"], denied, servers["c"], f"b.{denied}", 240, detail=logs)
    finally:
        for producer in producers.values():
            producer.stop.set()
        for process in processes:
            if process.alive():
                process.kill9()

    for site in SITES:
        halts = groups[site].state().halts
        assert not halts, f"partitions halted in {site}'s log: {halts}"
    counts = {
        "a->b": _exact(servers["a"], from_a, servers["b"], f"a.{from_a}"),
        "b->c": _exact(servers["b"], from_b, servers["c"], f"b.{from_b}"),
        "b->a": _exact(servers["b"], from_b, servers["a"], f"b.{from_b}"),
        "c->a": _exact(servers["c"], from_c, servers["a"], f"c.{from_c}"),
        "b->c (added)": _exact(servers["b"], later, servers["c"], f"b.{later}"),
        "b->c (new)": _exact(servers["b"], fresh, servers["c"], f"b.{fresh}"),
    }
    assert counts["a->b"].produced == sent_to_a
    print("\nsite loss:")
    for line in figures:
        print(f"  {line}")
    for flow, count in counts.items():
        print(f"  {flow}: {count}")
