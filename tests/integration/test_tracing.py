"""One trace from srm-control through the gateway and the coordinator leader to the driver
that applies the change, on real Kafka, every process exporting to a tiny OTLP/HTTP
receiver in the test; and an unreachable collector leaves commands working.

Run with ``-s`` to see the trace id and the driver's line that carries it.
"""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

import pytest
from srm_common import telemetry
from srm_control import cli as control_cli
from srm_harness.clients import create_topic, produce
from srm_harness.compare import copied
from srm_harness.control import control_config, control_log, control_state
from srm_harness.otlp_receiver import OtlpReceiver
from srm_harness.processes import CoordinatorProcess, DriverProcess, GatewayProcess, log_tails
from srm_harness.records import Record
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration]

SERVICES = {"srm-control", "srm-api-gateway", "srm-coordinator", "srm-driver"}


def _config(kafka, tmp_path: Path, prefix: str) -> Path:  # type: ignore[no-untyped-def]
    config = control_config(tmp_path, kafka.bootstrap, prefix)
    settings = control_log(config)
    for name in (settings.events_topic, settings.drivers_topic, settings.election_topic):
        kafka.created += [("primary", name), ("backup", name)]
    return config


_state = control_state


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_one_trace_from_srm_control_to_the_driver_that_applies_it_when_otlp_is_configured(  # type: ignore[no-untyped-def]
    kafka, tmp_path, unique_name, capsys, monkeypatch, http_tokens
):
    prefix = unique_name("trace")
    config = _config(kafka, tmp_path, prefix)
    base, added = f"{prefix}-base", f"{prefix}-added"
    for topic in (base, added):
        create_topic(kafka["primary"], topic, partitions=2)
        kafka.created.append(("primary", topic))
        kafka.created.append(("backup", f"primary.{topic}"))
    records = [Record(f"k{i}".encode(), f"v{i}".encode()) for i in range(20)]
    produce(kafka["primary"], added, records)
    with OtlpReceiver() as receiver:
        coordinator = CoordinatorProcess(
            config, tmp_path / "c1.log", "c1", "--state-file", str(tmp_path / "c1.json")
        )
        gateway = GatewayProcess(
            config,
            tmp_path / "gateway.log",
            f"sqlite:///{tmp_path / 'gateway.db'}",
            "--token-file",
            str(http_tokens.token_file("api-gateway")),
        )
        driver = DriverProcess(
            config, tmp_path / "d1.log", spark_master="local[1]", args=["--id", "d1"]
        )
        processes = [coordinator, gateway, driver]
        for process in processes:
            process.env.update(receiver.env())
        logs = log_tails(processes)
        try:
            for process in processes:
                process.start()
            wait_until(
                lambda: bool(_state(config).tasks_of("d1")) and gateway.url() is not None,
                240,
                "d1 runs the flow's task and the gateway serves",
                detail=logs,
            )
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
            code = control_cli.main(
                [
                    "--config",
                    str(config),
                    "--gateway",
                    str(gateway.url()),
                    "topics",
                    "--source",
                    "primary",
                    "--target",
                    "backup",
                    "--add",
                    added,
                ]
            )
            out, err = capsys.readouterr()
            assert code == 0, err
            found = re.search(r"trace_id=([0-9a-f]{32})", err)
            assert found, err
            trace_id = found.group(1)
            marker = f"trace_id={trace_id}"
            wait_until(
                lambda: marker in driver.log_text(), 120, "the driver applies it", detail=logs
            )
            line = next(x for x in driver.log_text().splitlines() if marker in x)
            assert f"primary->backup {added}:0" in line and f"{added}:1" in line
            # ... and it did: the topic's records reach the backup cluster.
            wait_until(
                lambda: copied(kafka["primary"], added, kafka["backup"], f"primary.{added}"),
                120,
                "the added topic is copied",
                detail=logs,
            )
            wait_until(
                lambda: {s.service for s in receiver.trace(trace_id)} >= SERVICES,
                30,
                "spans of every service in the trace reach the receiver",
                detail=lambda: f"{receiver.trace(trace_id)}\n{logs()}",
            )
            spans = receiver.trace(trace_id)
            by_id = {s.span_id: s for s in spans}
            # One tree: every span but srm-control's root has its parent in the trace.
            roots = [s for s in spans if s.parent_id not in by_id]
            assert [(s.service, s.parent_id) for s in roots] == [("srm-control", "")]
            wait_until(
                lambda: (
                    {"srm.coordinator.commands", "srm.http.server.requests"}
                    <= receiver.metrics.get("srm-coordinator", set())
                    and "srm.driver.control.events" in receiver.metrics.get("srm-driver", set())
                ),
                30,
                "service metrics reach the receiver",
                detail=lambda: str(receiver.metrics),
            )
            with capsys.disabled():
                print(f"\nsrm-control printed: {err.strip()}")
                print(f"srm-control said: {out.strip()}")
                print(f"driver d1 logged: {line}")
                for s in spans:
                    parent = by_id.get(s.parent_id)
                    print(
                        f"  span {s.service:16} {s.name:42} parent:"
                        f" {parent.service + ' ' + parent.name if parent else '(root)'}"
                    )
                print(f"metrics received: {sorted(receiver.metrics.items())}")
        finally:
            for process in processes:
                if process.alive():
                    process.stop(60)
            telemetry.setup("srm-test", env={})


def test_commands_work_and_are_not_slowed_when_the_otlp_endpoint_is_unreachable(  # type: ignore[no-untyped-def]
    kafka, tmp_path, unique_name, capsys, monkeypatch
):
    prefix = unique_name("notrace")
    config = _config(kafka, tmp_path, prefix)
    nowhere = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{_closed_port()}"}
    coordinator = CoordinatorProcess(
        config, tmp_path / "c1.log", "c1", "--state-file", str(tmp_path / "c1.json")
    )
    coordinator.env.update(nowhere)
    try:
        coordinator.start()
        wait_until(
            lambda: _state(config).leader is not None,
            60,
            "c1 leads",
            detail=lambda: coordinator.log_text()[-2000:],
        )
        timings = {}
        for case, endpoint in (("no export", None), ("unreachable", nowhere)):
            monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
            if endpoint is not None:
                monkeypatch.setenv(
                    "OTEL_EXPORTER_OTLP_ENDPOINT", endpoint["OTEL_EXPORTER_OTLP_ENDPOINT"]
                )
            topic = f"{prefix}-{case.replace(' ', '-')}"
            started = time.monotonic()
            code = control_cli.main(
                ["--config", str(config), "topics", "--source", "primary", "--target", "backup"]
                + ["--add", topic]
            )
            timings[case] = time.monotonic() - started
            out, err = capsys.readouterr()
            assert code == 0, err
            assert topic in out
            assert topic in _state(config).flow("primary->backup").topics
        # An unreachable collector costs srm-control at most its bounded flush at exit (2 s).
        extra = timings["unreachable"] - timings["no export"]
        assert extra < 3.5, f"srm-control took {extra:.1f} s longer: {timings}"
        assert coordinator.alive()
        with capsys.disabled():
            print(
                f"\nsrm-control, exit 0 both times: {timings['no export']:.1f} s without export,"
                f" {timings['unreachable']:.1f} s with an unreachable collector"
            )
    finally:
        coordinator.stop(60)
        telemetry.setup("srm-test", env={})
