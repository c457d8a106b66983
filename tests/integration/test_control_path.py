"""The control path on real Kafka: coordinators, srm-control, audit, failover, fencing.

Two ``srm-coordinator`` processes serve the log of every target cluster (backup's holds
primary->backup, the flow these tests change; primary's the heartbeat-only reverse).
srm-control's changes become events; ``audit --at`` rebuilds an earlier state; killing
the leader with SIGKILL hands the log to the standby, whose replayed state is the same
as a fresh replay, as the gateway's SQL read model's, and as the dead leader's last
state.
"""

from __future__ import annotations

import gc
import json
import socket
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Producer
from srm_common.adapters.event_log_reads import read_log
from srm_common.adapters.event_log_writer import EventLogWriter
from srm_common.control.events import Envelope, TopicsAllowed, encode, event_key
from srm_common.errors import Fenced
from srm_control import cli as control_cli
from srm_control.audit import format_time
from srm_harness.clients import (
    SteadyProducer,
    consume_all,
    delete_topics,
    end_offsets,
    list_topics,
    produce,
)
from srm_harness.compare import count_copy
from srm_harness.control import control_config, control_log, control_state, get_json, write_config
from srm_harness.processes import CoordinatorProcess, DriverProcess, GatewayProcess, log_tails
from srm_harness.records import Record
from srm_harness.waits import wait_caught_up, wait_until

pytestmark = [pytest.mark.integration]


def _config(kafka, tmp_path: Path, prefix: str) -> Path:  # type: ignore[no-untyped-def]
    return control_config(tmp_path, kafka.bootstrap, prefix)


def _control(config: Path, *args: str, capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = control_cli.main(["--config", str(config), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


_state = control_state


def _get(url: str) -> dict:  # type: ignore[type-arg]
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def test_srm_control_audit_and_leader_failover(kafka, tmp_path, unique_name, capsys):  # type: ignore[no-untyped-def]
    prefix = unique_name("ctl")
    config = _config(kafka, tmp_path, prefix)
    c1 = CoordinatorProcess(
        config, tmp_path / "c1.log", "c1", "--state-file", str(tmp_path / "c1.json")
    )
    c2 = CoordinatorProcess(
        config, tmp_path / "c2.log", "c2", "--state-file", str(tmp_path / "c2.json")
    )
    db_url = f"sqlite:///{tmp_path / 'gateway.db'}"
    gateway = GatewayProcess(config, tmp_path / "gateway.log", db_url)
    try:
        gateway.start()
        c1.start()
        wait_until(
            lambda: _state(config).leader is not None,
            60,
            "a coordinator leads",
            detail=lambda: c1.log_text()[-2000:],
        )
        c2.start()
        first = _state(config).leader
        assert first is not None and first.coordinator == "c1"
        # The config file seeded the lists.
        assert _state(config).flow("primary->backup").topics == (f"{prefix}-base",)

        code, out, err = _control(
            config,
            "topics",
            "--source",
            "primary",
            "--target",
            "backup",
            "--add",
            f"{prefix}-orders,{prefix}-pay.*",
            capsys=capsys,
        )
        assert code == 0, err
        assert f"{prefix}-orders" in out and f"{prefix}-pay.*" in out
        time.sleep(0.05)
        moment = int(time.time() * 1000)
        time.sleep(0.05)
        code, out, err = _control(
            config,
            "topics",
            "--source",
            "primary",
            "--target",
            "backup",
            "--remove",
            f"{prefix}-orders",
            "--add-blacklist",
            f"{prefix}-pay\\.tmp",
            capsys=capsys,
        )
        assert code == 0, err

        # --list shows the current lists.
        code, out, err = _control(
            config, "topics", "--source", "primary", "--target", "backup", "--list", capsys=capsys
        )
        assert code == 0, err
        allow = out.split("Current whitelist:")[1].split("Current blacklist:")[0].split()
        deny = out.split("Current blacklist:")[1].split("Replicated now")[0].split()
        assert allow == [f"{prefix}-base", f"{prefix}-pay.*"]
        # MM2's default topics.exclude came from the config file; ours is added last.
        assert deny[-1] == f"{prefix}-pay\\.tmp" and ".*\\.replica" in deny

        # audit --at: the state between the two commands, rebuilt by replay.
        code, out, err = _control(config, "audit", "--at", format_time(moment), capsys=capsys)
        assert code == 0, err
        print(out)
        assert f"topics allow: {prefix}-base, {prefix}-orders, {prefix}-pay.*" in out
        assert "pay\\.tmp" not in out
        code, out, err = _control(config, "audit", capsys=capsys)
        assert code == 0 and "via srm-control" in out, err
        print(out)

        # Bad input: one line, non-zero, nothing changed.
        before = _state(config).digest()
        for args, message in [
            (
                ["--source", "nowhere", "--target", "backup", "--add", "x"],
                "unknown cluster alias 'nowhere'",
            ),
            (["--source", "primary", "--target", "backup", "--add", "orders("], "orders("),
            (
                ["--source", "primary", "--target", "backup", "--remove", "never-added"],
                "never-added",
            ),
        ]:
            code, out, err = _control(config, "topics", *args, capsys=capsys)
            assert code != 0 and message in err and "Traceback" not in err, (args, err)
            assert len(err.strip().splitlines()) == 1, err
        assert _state(config).digest() == before

        # Kill -9 the leader; the standby takes over and fences it.
        wait_until(lambda: "replayed" in c2.log_text(), 30, "c2 has replayed the log")
        last_by_c1 = _state(config)
        killed = time.monotonic()
        c1.kill9()
        wait_until(
            lambda: (_state(config).leader or first).coordinator == "c2",
            60,
            "c2 leads",
            detail=lambda: c2.log_text()[-3000:],
            step=0.2,
        )
        took = time.monotonic() - killed
        after = _state(config)
        with capsys.disabled():
            print(
                f"\nstandby c2 leads {took:.1f} s after kill -9 of c1 (epoch {after.leader.epoch})"
            )
        assert after.leader.epoch == first.epoch + 1
        # Nothing was lost: the state c1 left is the state c2 replayed (only the new
        # term's CoordinatedElected differs).
        assert after.flows == last_by_c1.flows and after.tasks == last_by_c1.tasks

        code, out, err = _control(
            config,
            "topics",
            "--source",
            "primary",
            "--target",
            "backup",
            "--add",
            f"{prefix}-after-failover",
            capsys=capsys,
        )
        assert code == 0, err
        c2_url = _state(config).leader.url
        served = _get(f"{c2_url}/v1/state")["logs"]["backup"]
        fresh = _state(config)
        assert served["digest"] == fresh.digest()

        # The gateway's SQL read model replays to the same state.
        def replayed_from_db() -> str:
            code, out, err = _control(
                config,
                "audit",
                "--at",
                str(int(time.time() * 1000) + 1000),
                "--json",
                "--db",
                db_url,
                capsys=capsys,
            )
            assert code == 0, err
            return json.loads(out)["logs"]["backup"]["digest"]

        wait_until(
            lambda: replayed_from_db() == fresh.digest(),
            30,
            "the gateway's read model replays to the log's state",
            detail=lambda: gateway.log_text()[-2000:],
        )
    finally:
        for process in (c1, c2, gateway):
            if process.alive():
                process.kill9()


def test_a_new_leader_fences_the_old_one(kafka, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    """The fixed transactional id: once a new writer initialises, the old one's next
    append fails, and what it had not committed is never read."""
    prefix = unique_name("fence")
    config = _config(kafka, tmp_path, prefix)
    settings = control_log(config)
    from srm_common.adapters.control_topics import ensure_control_topics

    ensure_control_topics(settings)

    def event(pattern: str) -> Envelope:
        return Envelope(
            TopicsAllowed("primary->backup", (pattern,)), int(time.time() * 1000), "test"
        )

    old = EventLogWriter(settings, client_id="old-leader")
    old.fence()
    old.append([event("written-by-old")])
    # The old leader opens a transaction and is paused before it commits...
    zombie = Producer({**settings.client, "transactional.id": settings.transactional_id})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(
        settings.events_topic,
        key=event_key(event("x").event),
        value=encode(event("uncommitted-by-zombie")),
    )
    zombie.flush(10)
    # ...a new leader takes over...
    new = EventLogWriter(settings, client_id="new-leader")
    new.fence()
    new.append([event("written-by-new")])
    # ...and neither old writer can write any more.
    with pytest.raises(Fenced):
        old.append([event("late-write-by-old")])
    with pytest.raises(Exception, match="(?i)fenc|epoch"):
        zombie.commit_transaction(10)
    patterns = [p for e in read_log(settings) for p in e.event.patterns]
    print(f"event log after fencing: {patterns}")
    assert patterns == ["written-by-old", "written-by-new"]
    # Let the producers go now rather than at exit, after the clusters stopped, where
    # librdkafka logs connection errors for each (the fenced one lingers still).
    old.close()
    new.close()
    del old, new, zombie
    gc.collect()


def test_an_unreachable_source_cluster_holds_up_no_other_flow(kafka, tmp_path, unique_name, capsys):  # type: ignore[no-untyped-def]
    """A site is down (its cluster does not answer) while srm-control changes a flow of
    the clusters that are up: the leader lists the dead cluster in the background, so
    its 15-second timeouts do not hold up the other flow's task configs."""
    prefix = unique_name("down")
    topic = kafka.create_topic("primary", f"{prefix}-orders", partitions=3)
    with socket.socket() as probe:  # a port nothing listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{probe.getsockname()[1]}"
    config = write_config(
        tmp_path,
        {"backup": kafka["backup"], "primary": kafka["primary"], "gone": dead},
        flows={
            "primary->backup": {"enabled": True, "topics": [f"{prefix}-base"]},
            "gone->backup": {"enabled": True},
        },
        replication={"srm.control.topic.prefix": prefix},
    )
    coordinator = CoordinatorProcess(config, tmp_path / "c1.log", "c1", "--projection", "none")

    def partitions_of(flow: str) -> set[tuple[str, int]]:
        tasks = _state(config).tasks.get(flow)
        return {tp for task in (tasks.source if tasks else ()) for tp in task.partitions}

    try:
        started = time.monotonic()
        coordinator.start()
        wait_until(
            lambda: "primary->backup" in _state(config).tasks,
            60,
            "primary->backup planned",
            detail=lambda: coordinator.log_text()[-2000:],
        )
        planned = time.monotonic() - started
        code, out, err = _control(
            config,
            "topics",
            "--source",
            "primary",
            "--target",
            "backup",
            "--add",
            topic,
            capsys=capsys,
        )
        assert code == 0, err
        commanded = time.monotonic()
        wait_until(
            # (Other tests may have left a heartbeats topic on primary: copied too.)
            lambda: {(topic, p) for p in range(3)} <= partitions_of("primary->backup"),
            60,
            "the added topic is planned",
            detail=lambda: coordinator.log_text()[-2000:],
            step=0.1,
        )
        took = time.monotonic() - commanded
        wait_until(
            lambda: "gone->backup: cannot list gone" in coordinator.log_text(),
            60,
            "the dead cluster is reported",
            detail=lambda: coordinator.log_text()[-2000:],
        )
        print(
            f"with cluster 'gone' unreachable: primary->backup planned {planned:.1f} s after"
            f" start; --add {topic} in its task configs {took:.1f} s after the command"
        )
        # The dead cluster's flow has no task configs until its cluster answers.
        assert "gone->backup" not in _state(config).tasks
        assert coordinator.alive()
    finally:
        if coordinator.alive():
            coordinator.kill9()


def _leader_log(process: CoordinatorProcess, target: str = "backup") -> dict:  # type: ignore[type-arg]
    """The coordinator's view of a target's log (GET /v1/leader), from the URL it printed."""
    return _get(f"{_leader_log_url(process)}/v1/leader")["logs"][target]["log"]


def _copied(kafka, remote: str) -> int:  # type: ignore[no-untyped-def]
    return sum(end_offsets(kafka["backup"], remote).values())


@pytest.mark.spark
def test_junk_and_a_lost_event_log_stop_no_replication(kafka, tmp_path, unique_name, capsys):  # type: ignore[no-untyped-def]
    """Two coordinators and a driver copying under load. A record that is not an event
    (``echo junk | kafka-console-producer``) is skipped and reported with its offset by
    both coordinators and the driver, and copying goes on. Then the events topic is
    deleted: every coordinator reports 'event log lost', keeps its state (equal digests)
    and nobody leads, so the driver copies on; `srm-control restore --from-db` brings back
    the same `--list`, and the copy is exact at the end."""
    prefix = unique_name("lost")
    topic = kafka.create_topic("primary", f"{prefix}-orders", partitions=2)
    remote = f"primary.{topic}"
    kafka.created.append(("backup", remote))
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {"enabled": True, "topics": [topic]},
            "backup->primary": {"enabled": False},
        },
        # Shorter than the defaults, the same rules: the restored log holds every task
        # until the lost log's drivers are waited out (their lease, max.block and write
        # timeout: 9.2 s here, 17.3 s with the defaults).
        replication={
            "srm.control.topic.prefix": prefix,
            "srm.driver.session.timeout.ms": 6000,
            "srm.driver.write.timeout.ms": 4000,
        },
    )
    settings = control_log(config)  # backup's: primary->backup's log
    for name in (settings.events_topic, settings.drivers_topic, settings.election_topic):
        kafka.created.append(("backup", name))
        kafka.created.append(("primary", name))
    coordinators = [
        CoordinatorProcess(
            config, tmp_path / f"{c}.log", c, "--state-file", str(tmp_path / f"{c}.json")
        )
        for c in ("c1", "c2")
    ]
    db_url = f"sqlite:///{tmp_path / 'gateway.db'}"
    gateway = GatewayProcess(config, tmp_path / "gateway.log", db_url)
    driver = DriverProcess(
        config, tmp_path / "d1.log", spark_master="local[1]", args=["--id", "d1"]
    )
    producer = SteadyProducer(kafka["primary"], topic, 2)
    processes = [*coordinators, driver, gateway]

    logs = log_tails(processes)

    def lists() -> str:
        code, out, err = _control(
            config, "topics", "--source", "primary", "--target", "backup", "--list", capsys=capsys
        )
        assert code == 0, err
        return out

    try:
        coordinators[0].start()
        gateway.start()
        wait_until(lambda: _state(config).leader is not None, 60, "c1 leads", detail=logs)
        coordinators[1].start()
        driver.start()
        producer.start()
        wait_until(lambda: _copied(kafka, remote) > 1000, 240, "copying", detail=logs)
        driver_url = _state(config).drivers["d1"].url

        # 1. Junk in the event log.
        produce(kafka["backup"], settings.events_topic, [Record(None, b"junk")])
        wait_until(
            lambda: all(_leader_log(c)["skipped"] == 1 for c in coordinators),
            30,
            "both coordinators skip the junk",
            detail=logs,
        )
        where = _leader_log(coordinators[0])["skipped_recent"][0]["at"]
        copied = _copied(kafka, remote)
        wait_until(
            lambda: _copied(kafka, remote) > copied + 3000, 60, "copying goes on", detail=logs
        )
        assert all(p.alive() for p in processes)
        assert f"skipped the record at {where}: control event at offset" in (
            coordinators[1].log_text()
        )
        assert get_json(f"{driver_url}/v1/driver")["control_log"]["backup"]["skipped"] == 1
        with capsys.disabled():
            print(f"\njunk at {where}: skipped by c1, c2 and d1; copying went on")

        # 2. The event log deleted while running.
        before = lists()
        deleted = time.monotonic()
        delete_topics(kafka["backup"], [settings.events_topic])
        wait_until(
            lambda: all(
                (_leader_log(c)["problem"] or "").startswith("event log lost") for c in coordinators
            ),
            60,
            "every coordinator reports the log lost",
            detail=logs,
        )
        reported = time.monotonic() - deleted
        states = [_get(f"{_leader_log_url(c)}/v1/state")["logs"]["backup"] for c in coordinators]
        leaders = [
            _get(f"{_leader_log_url(c)}/v1/leader")["logs"]["backup"]["leading"]
            for c in coordinators
        ]
        assert states[0]["digest"] == states[1]["digest"], "coordinators diverged"
        assert leaders == [False, False]
        assert any(
            _get(f"{_leader_log_url(c)}/v1/leader")["logs"]["primary"]["leading"]
            for c in coordinators
        ), "primary's log is not concerned: still led"
        copied = _copied(kafka, remote)
        time.sleep(10)
        copied_while_lost = _copied(kafka, remote) - copied
        assert settings.events_topic not in list_topics(kafka["backup"]), (
            "nobody may start an empty log in the lost one's place"
        )
        assert "event log lost" in driver_log_problem(driver_url)
        assert copied_while_lost > 0, "nobody leads: the driver keeps its lease and copies"

        # 3. Restore from the gateway's SQL read model.
        code, out, err = _control(config, "restore", "--from-db", db_url, capsys=capsys)
        assert code == 0, err
        assert "primary: the events topic" in out and "; skipped" in out, "primary's is not lost"
        restored = time.monotonic()
        wait_until(lambda: lists() == before, 120, "the same --list", detail=logs)
        listed = time.monotonic() - restored
        # Tasks run again once the lost log's driver (its lease, its writes) is waited out.
        wait_until(
            lambda: bool(_state(config).tasks_of("d1")), 120, "d1 runs tasks again", detail=logs
        )
        assigned = time.monotonic() - restored
        copied = _copied(kafka, remote)
        wait_until(
            lambda: _copied(kafka, remote) > copied + 3000, 120, "copying again", detail=logs
        )
        producer.finish()
        wait_caught_up(kafka["primary"], topic, kafka["backup"], remote, 120, detail=logs)
        count = count_copy(
            consume_all(kafka["primary"], topic),
            consume_all(kafka["backup"], remote),
        )
        with capsys.disabled():
            print(
                f"events topic deleted: 'event log lost' on c1 and c2 within {reported:.1f} s,"
                f" equal digests {states[0]['digest'][:12]}, nobody leads; {copied_while_lost}"
                f" records copied in the 10 s after; restore --from-db: same --list"
                f" {listed:.1f} s later, d1's tasks assigned again {assigned:.1f} s later"
                f" (wait-out {settings.wait_out_ms / 1000:.1f} s); {count}"
            )
            print(out)
        assert count.missing == 0 and count.duplicated == 0
    finally:
        producer.stop.set()
        for process in processes:
            if process.alive():
                process.kill9()


def _leader_log_url(process: CoordinatorProcess) -> str:
    return process.log_text().split("API at ")[-1].split()[0]


def driver_log_problem(url: str) -> str:
    return get_json(f"{url}/v1/driver")["control_log"]["backup"]["problem"] or ""


def test_control_topics_of_a_wrong_shape_are_refused_with_the_fix(kafka, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    """An election topic with two partitions (two leaders) and an event log that is
    compacted: the coordinator does not start, and says how to fix each."""
    prefix = unique_name("shape")
    config = _config(kafka, tmp_path, prefix)
    settings = control_log(config)  # backup's
    kafka.create_topic("backup", settings.election_topic, partitions=2)
    kafka.create_topic("backup", settings.events_topic, config={"cleanup.policy": "compact"})
    for name in (settings.drivers_topic, settings.events_topic, settings.election_topic):
        kafka.created.append(("primary", name))  # primary's log, made before backup's refused
    kafka.created.append(("backup", settings.drivers_topic))
    coordinator = CoordinatorProcess(config, tmp_path / "c1.log", "c1", "--projection", "none")
    coordinator.start()
    assert coordinator.process is not None
    assert coordinator.process.wait(60) == 1
    refused = coordinator.log_text().strip().splitlines()[-1]
    print(refused)
    assert "has 2 partitions, not 1: each partition elects a coordinator" in refused
    assert f"--delete --topic {settings.election_topic}" in refused

    delete_topics(kafka["backup"], [settings.election_topic])
    coordinator.start()
    assert coordinator.process.wait(60) == 1
    refused = coordinator.log_text().strip().splitlines()[-1]
    print(refused)
    assert f"the event log topic {settings.events_topic} has cleanup.policy=compact" in refused
    assert "--add-config cleanup.policy=delete" in refused
