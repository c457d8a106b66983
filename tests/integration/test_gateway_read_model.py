"""The gateway's SQL read model on real Kafka: srm-control's commands land in the
gateway's database as audit rows; the gateway killed with SIGKILL and restarted (after a
command it missed) stores no row twice and still serves the history; srm-control reads
the same database (``audit --db``)."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select
from srm_common.adapters.event_log_reads import read_log
from srm_common.adapters.sql.schema import events
from srm_control import cli as control_cli
from srm_harness.control import control_log, write_config
from srm_harness.processes import CoordinatorProcess, GatewayProcess, log_tails
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration]


def _get(url: str) -> dict:  # type: ignore[type-arg]
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _rows(db_url: str, log: str = "backup") -> list[tuple[int, str]]:
    """(offset, summary) of every row of ``log``'s log, by offset."""
    engine = create_engine(db_url)
    try:
        with engine.connect() as connection:
            query = (
                select(events.c.log_offset, events.c.summary)
                .where(events.c.log == log)
                .order_by(events.c.log_offset)
            )
            return [(int(o), str(t)) for o, t in connection.execute(query)]
    finally:
        engine.dispose()


def _add(config: Path, pattern: str, capsys) -> None:  # type: ignore[no-untyped-def]
    code = control_cli.main(
        ["--config", str(config), "topics", "--source", "primary", "--target", "backup"]
        + ["--add", pattern, "--token-file", str(config.parent / "srm-control.token")]
    )
    out = capsys.readouterr()
    assert code == 0, out.err


def test_commands_reach_the_gateways_database_once_across_a_kill_9(  # type: ignore[no-untyped-def]
    kafka, tmp_path, unique_name, capsys
):
    prefix = unique_name("gwdb")
    (tmp_path / "srm-control.token").write_text("t0ken-of-srm-control\n")
    tokens = tmp_path / "tokens"
    tokens.write_text("srm-control t0ken-of-srm-control\n")
    tokens.chmod(0o600)
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {"enabled": True, "topics": [f"{prefix}-base"]},
            "backup->primary": {"enabled": False},
        },
        replication={"srm.control.topic.prefix": prefix, "srm.http.tokens.file": str(tokens)},
    )
    settings = control_log(config)  # backup's: the log of primary->backup
    for name in (settings.events_topic, settings.drivers_topic, settings.election_topic):
        kafka.created += [("primary", name), ("backup", name)]
    db_url = f"sqlite:///{tmp_path / 'gateway.db'}"
    coordinator = CoordinatorProcess(
        config, tmp_path / "c1.log", "c1", "--state-file", str(tmp_path / "c1.json")
    )
    gateway = GatewayProcess(config, tmp_path / "gateway.log", db_url)
    logs = log_tails([coordinator, gateway])

    def log_offsets() -> list[int]:
        return [e.offset for e in read_log(settings, timeout=15)]

    def projected() -> bool:
        return [o for o, _ in _rows(db_url)] == log_offsets()

    try:
        coordinator.start()
        gateway.start()
        wait_until(lambda: gateway.url() is not None, 60, "the gateway serves", detail=logs)
        wait_until(
            lambda: (
                _get(f"{gateway.url()}/v1/state")["logs"]["backup"]["state"].get("leader")
                is not None
            ),
            60,
            "c1 leads (as the gateway reads the log)",
            detail=logs,
        )
        _add(config, f"{prefix}-orders", capsys)
        _add(config, f"{prefix}-payments", capsys)
        wait_until(projected, 60, "the gateway's database holds the log", detail=logs)
        for pattern in ("orders", "payments"):
            found = [t for _, t in _rows(db_url) if f"{prefix}-{pattern}" in t]
            assert len(found) == 1, _rows(db_url)
        changes = [c["change"] for c in _get(f"{gateway.url()}/v1/audit")["changes"]]
        assert f"{prefix}-orders" in changes[-2] and f"{prefix}-payments" in changes[-1], changes

        # kill -9, a command the gateway misses, a restart that reads the log again.
        before = len(_rows(db_url))
        gateway.kill9()
        _add(config, f"{prefix}-refunds", capsys)
        gateway.start()
        restarted = time.monotonic()
        wait_until(lambda: gateway.url() is not None, 60, "the gateway serves", detail=logs)
        wait_until(projected, 60, "the missed command is projected", detail=logs)
        rows = _rows(db_url)
        offsets = [o for o, _ in rows]
        assert len(offsets) == len(set(offsets)) == len(log_offsets()), "a row stored twice"
        assert len(rows) > before
        for pattern in ("orders", "payments", "refunds"):
            assert len([t for _, t in rows if f"{prefix}-{pattern}" in t]) == 1, rows

        # History still served, from SQL (the read model says it is up to date).
        wait_until(
            lambda: _get(f"{gateway.url()}/v1/log")["read_model"]["up_to_date"],
            30,
            "the read model is up to date",
            detail=logs,
        )
        trail = _get(f"{gateway.url()}/v1/audit?all=true")
        assert trail["total"] == len(rows) + len(_rows(db_url, "primary")), "every log's rows"
        assert f"{prefix}-refunds" in json.dumps(trail["changes"][-5:])
        ready = _get(f"{gateway.url()}/readyz")
        assert ready["status"] == "ready" and ready["read_model"]["status"] == "ok"

        # srm-control reads the same database.
        code = control_cli.main(["--config", str(config), "audit", "--db", db_url, "--json"])
        out = capsys.readouterr()
        assert code == 0, out.err
        assert f"{prefix}-refunds" in out.out
        with capsys.disabled():
            print(
                f"\ngateway read model: {len(rows)} rows = the log's {len(log_offsets())}"
                f" events after kill -9 and restart (caught up in"
                f" {time.monotonic() - restarted:.1f} s), no offset twice"
            )
    finally:
        for process in (gateway, coordinator):
            if process.alive():
                process.kill9()
