"""srm-control restore: the restored log rebuilds the lost log's configuration, from a SQL
projection or an audit export; the projection keeps both logs as one history."""

from __future__ import annotations

from pathlib import Path

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
)
from srm_common.control.state import replay
from srm_coordinator.audit import render_state
from srm_coordinator.projector import Projector
from srm_coordinator.restore import configuration, from_audit, from_db, restored_events

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
        replay(lost), log_id="L2", source="test", by="alice via srm-control restore", now_ms=9
    )
    return [Envelope(e.event, e.at_ms, e.by, e.command_id, 2 * i) for i, e in enumerate(restored)]


def test_the_restored_log_holds_the_lost_logs_configuration_and_says_where_it_came_from() -> None:
    lost = replay(log_of(LOST))
    restored = restore_of(log_of(LOST))
    first = restored[0].event
    assert first == LogStarted("L2", "L1", "test")
    assert all(e.by == "alice via srm-control restore" for e in restored)
    state = replay(restored)
    assert configuration(state) == configuration(lost)
    assert state.log_id == "L2" and state.leader is None and not state.tasks
    assert state.flow(FLOW).topics_exclude == ("pay\\.tmp",)


def test_an_audit_export_restores_the_same_as_the_log(tmp_path: Path) -> None:
    lost = replay(log_of(LOST))
    export = tmp_path / "state.json"
    export.write_text(render_state(lost, 5000, as_json=True))
    from_file, source = from_audit(export)
    assert configuration(from_file) == configuration(lost) and from_file.log_id == "L1"
    assert source.startswith("audit export state.json (state at ")


def test_a_projection_remembers_its_log_and_keeps_a_restored_one_after_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c1.db'}"
    projector = Projector(url)
    assert projector.known_log() is None
    projector.project(log_of(LOST))
    assert projector.known_log() == "L1"
    lost, _source = from_db(url)
    assert configuration(lost) == configuration(replay(log_of(LOST)))

    # The restored log starts again at offset 0; its rows follow the lost log's.
    restored = restore_of(log_of(LOST))
    projector.project(restored)
    assert projector.known_log() == "L2"
    rows = projector.projection.values_until()
    assert len(rows) == len(LOST) + len(restored)
    assert [o for o, _ in rows] == sorted(o for o, _ in rows)
    replayed, _ = from_db(url)
    assert replayed.log_id == "L2" and configuration(replayed) == configuration(lost)
    projector.close()

    # Restarted, the coordinator reads the restored log from offset 0 again: no new rows.
    again = Projector(url)
    again.project(restored)
    assert len(again.projection.values_until()) == len(rows)
    again.close()


def test_a_projection_of_a_log_without_ids_knows_that_a_log_existed(tmp_path: Path) -> None:
    projector = Projector(f"sqlite:///{tmp_path / 'old.db'}")
    projector.project(log_of(LOST[1:]))
    assert projector.known_log() == ""
    projector.close()
