"""The control path on real Kafka: coordinators, srm-control, audit, failover, fencing.

Two ``srm-coordinator`` processes share one event log. srm-control's changes become
events; ``audit --at`` rebuilds an earlier state; killing the leader with SIGKILL hands
the log to the standby, whose replayed state is the same as a fresh replay, as the SQL
projection's, and as the dead leader's last state.
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
from srm_common.adapters.kafka_log import EventLogWriter, Fenced, read_log
from srm_common.cli_support import load_or_exit
from srm_common.config.control import control_settings
from srm_common.control.events import Envelope, TopicsAllowed, encode, event_key
from srm_common.control.state import replay
from srm_coordinator import control_cli
from srm_coordinator.audit import format_time
from srm_local import testing

pytestmark = [pytest.mark.integration]


def _config(kafka, tmp_path: Path, prefix: str) -> Path:  # type: ignore[no-untyped-def]
    return testing.write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {"enabled": True, "topics": [f"{prefix}-base"]},
            "backup->primary": {"enabled": False},
        },
        replication={"srm.control.topic.prefix": prefix},
    )


def _control(config: Path, *args: str, capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = control_cli.main(["--config", str(config), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _state(config: Path):  # type: ignore[no-untyped-def]
    settings = control_settings(load_or_exit("test", config, []))
    return replay(read_log(settings, timeout=15))


def _get(url: str) -> dict:  # type: ignore[type-arg]
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def test_srm_control_audit_and_leader_failover(kafka, tmp_path, unique_name, capsys):  # type: ignore[no-untyped-def]
    prefix = unique_name("ctl")
    config = _config(kafka, tmp_path, prefix)
    c1 = testing.CoordinatorProcess(
        config, tmp_path / "c1.log", "c1", "--projection", f"sqlite:///{tmp_path / 'c1.db'}"
    )
    c2 = testing.CoordinatorProcess(
        config, tmp_path / "c2.log", "c2", "--projection", f"sqlite:///{tmp_path / 'c2.db'}"
    )
    try:
        c1.start()
        testing.wait_until(
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
        testing.wait_until(lambda: "replayed" in c2.log_text(), 30, "c2 has replayed the log")
        last_by_c1 = _state(config)
        killed = time.monotonic()
        c1.kill9()
        testing.wait_until(
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
        served = _get(f"{c2_url}/v1/state")
        fresh = _state(config)
        assert served["digest"] == fresh.digest()
        # The SQL projection replays to the same state.
        code, out, err = _control(
            config,
            "audit",
            "--at",
            str(int(time.time() * 1000) + 1000),
            "--json",
            "--db",
            f"sqlite:///{tmp_path / 'c2.db'}",
            capsys=capsys,
        )
        assert code == 0, err
        assert json.loads(out)["digest"] == fresh.digest()
    finally:
        for process in (c1, c2):
            if process.alive():
                process.kill9()


def test_a_new_leader_fences_the_old_one(kafka, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    """The fixed transactional id: once a new writer initialises, the old one's next
    append fails, and what it had not committed is never read."""
    prefix = unique_name("fence")
    config = _config(kafka, tmp_path, prefix)
    settings = control_settings(load_or_exit("test", config, []))
    from srm_common.adapters.kafka_log import ensure_control_topics

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
    config = testing.write_config(
        tmp_path,
        {"backup": kafka["backup"], "primary": kafka["primary"], "gone": dead},
        flows={
            "primary->backup": {"enabled": True, "topics": [f"{prefix}-base"]},
            "gone->backup": {"enabled": True},
        },
        replication={"srm.control.topic.prefix": prefix},
    )
    coordinator = testing.CoordinatorProcess(
        config, tmp_path / "c1.log", "c1", "--projection", "none"
    )

    def partitions_of(flow: str) -> set[tuple[str, int]]:
        tasks = _state(config).tasks.get(flow)
        return {tp for task in (tasks.source if tasks else ()) for tp in task.partitions}

    try:
        started = time.monotonic()
        coordinator.start()
        testing.wait_until(
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
        testing.wait_until(
            # (Other tests may have left a heartbeats topic on primary: copied too.)
            lambda: {(topic, p) for p in range(3)} <= partitions_of("primary->backup"),
            60,
            "the added topic is planned",
            detail=lambda: coordinator.log_text()[-2000:],
            step=0.1,
        )
        took = time.monotonic() - commanded
        testing.wait_until(
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
