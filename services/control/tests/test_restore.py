"""srm-control restore: the restored log rebuilds the lost log's configuration, from a SQL
read model (the gateway's, read only) or an audit export."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect
from srm_common.adapters.sql.projection import ProjectedEvent, SqlProjection
from srm_common.control.carry import configuration, into
from srm_common.control.events import (
    ConfigApplied,
    CoordinatorElected,
    Envelope,
    Event,
    FlowBaseline,
    FlowEnabled,
    LogStarted,
    PartitionHalted,
    PartitionResumeRequested,
    RecordsLost,
    TopicsAllowed,
    TopicsDenied,
    encode,
)
from srm_common.control.state import replay
from srm_common.errors import SrmError
from srm_control.audit import render_state, render_states
from srm_control.restore import SINGLE, from_audit, from_db, lost_state, restored_events

INTO = into("backup")

FLOW = "primary->backup"
LOST: list[Event] = [
    LogStarted("L1", None, ""),
    CoordinatorElected("c1", "http://c1:1", 1),
    FlowEnabled(FLOW),
    TopicsAllowed(FLOW, ("orders", "pay.*")),
    ConfigApplied("srm.yaml", {FLOW: FlowBaseline(True, ("orders",), (), (), ())}),
    TopicsDenied(FLOW, ("pay\\.tmp",)),
    TopicsAllowed("backup->primary", ("b",)),
    PartitionHalted(FLOW, "orders", 3, "conflict", "records we did not write", "d1"),
    PartitionHalted(FLOW, "orders", 4, "truncated", "source end below", "d2"),
    PartitionResumeRequested(FLOW, "orders", 4, "copy-end", None, "r-1"),
    RecordsLost(FLOW, "orders", 0, 100, 130, "d1"),
]


def log_of(events: list[Event], start: int = 0) -> list[Envelope]:
    return [Envelope(e, 1000 + i, "test", offset=start + 2 * i) for i, e in enumerate(events)]


def restore_of(lost: list[Envelope]) -> list[Envelope]:
    restored = restored_events(
        replay(lost),
        log_id="L2",
        source="test",
        by="alice via srm-control restore",
        now_ms=9,
        target="backup",
    )
    return [Envelope(e.event, e.at_ms, e.by, e.command_id, 2 * i) for i, e in enumerate(restored)]


def test_the_restored_log_holds_the_lost_logs_configuration_and_says_where_it_came_from() -> None:
    lost = replay(log_of(LOST))
    restored = restore_of(log_of(LOST))
    first = restored[0].event
    assert first == LogStarted("L2", "L1", "test", "backup")
    assert all(e.by == "alice via srm-control restore" for e in restored)
    state = replay(restored)
    assert configuration(state, INTO) == configuration(lost, INTO)
    assert "backup->primary" not in state.flows, "only the flows into the log's target"
    assert state.log_id == "L2" and state.leader is None and not state.tasks
    assert state.flow(FLOW).topics_exclude == ("pay\\.tmp",)


def test_an_audit_export_restores_the_same_as_the_log(tmp_path: Path) -> None:
    lost = replay(log_of(LOST))
    export = tmp_path / "state.json"
    export.write_text(render_state(lost, 5000, as_json=True))  # an earlier release's export
    states, source = from_audit(export)
    from_file = lost_state(states, "backup")
    assert from_file is not None and set(states) == {SINGLE}
    assert configuration(from_file) == configuration(lost) and from_file.log_id == "L1"
    assert source.startswith("audit export state.json (state at ")
    export.write_text(render_states({"backup": lost, "primary": replay([])}, 5000, as_json=True))
    states, _source = from_audit(export)
    assert set(states) == {"backup", "primary"}
    assert configuration(states["backup"]) == configuration(lost)


def gateway_db(url: str, envelopes: list[Envelope], log: str = "backup") -> None:
    """A read model as the gateway writes it (srm_api_gateway.event_projection)."""
    rows = [
        ProjectedEvent(
            e.offset, e.at_ms, e.event.TYPE, e.event.VERSION, e.by, None, "", encode(e), log
        )
        for e in envelopes
    ]
    with SqlProjection(url) as db:
        db.apply(rows)


def test_the_gateways_read_model_restores_the_lost_logs_configuration(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'gateway.db'}"
    gateway_db(url, log_of(LOST))
    gateway_db(url, log_of(LOST[:3]), "primary")
    states, source = from_db(url)
    assert configuration(states["backup"]) == configuration(replay(log_of(LOST)))
    assert states["backup"].log_id == "L1" and source == f"SQL projection {url} (14 rows)"
    assert lost_state(states, "primary") is states["primary"]


def test_a_read_model_of_an_earlier_release_restores_any_targets_flows(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'gateway.db'}"
    gateway_db(url, log_of(LOST), SINGLE)
    states, _source = from_db(url)
    assert lost_state(states, "backup") is lost_state(states, "primary") is states[SINGLE]


def test_restore_refuses_a_database_the_gateway_never_projected_into(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    with pytest.raises(SrmError, match="holds no srm_events table; give the database the"):
        from_db(url)
    # Read only: srm-control created nothing there.
    assert inspect(create_engine(url)).get_table_names() == []
