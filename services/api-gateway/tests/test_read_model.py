"""The gateway's SQL read model on SQLite in a temp dir: events and closed metric windows
stored once however often they are read, the current state tables, a restored log after
the lost one, a database that stops answering and comes back, and the HTTP answers a
restarted gateway gives from SQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select
from srm_api_gateway.metric_store import MINUTE, MetricStore
from srm_api_gateway.read_model import ReadModel
from srm_api_gateway.testing import FLOW, get, history, served
from srm_common.adapters.sql.schema import assignments, drivers, events, halts, metric_windows
from srm_common.config.model import SrmConfig
from srm_common.control.events import Envelope, FlowDisabled, LogStarted
from srm_common.control.state import ControlState, replay
from srm_common.metrics.aggregate import Aggregate, Figures
from srm_common.metrics.raw import TopicMapping

T0 = 1_700_000_040_000  # a minute boundary
TOPIC = {"flow": FLOW, "topic": "orders"}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "gateway.db"


def url_of(path: Path) -> str:
    # A short busy timeout: a locked database is "not answering" within the test.
    return f"sqlite:///{path}?timeout=0.2"


def count(path: Path, table) -> int:  # type: ignore[no-untyped-def]
    engine = create_engine(f"sqlite:///{path}")
    with engine.connect() as connection:
        found = connection.execute(select(func.count()).select_from(table)).scalar_one()
    engine.dispose()
    return int(found)


def window(start: int, records: int, *, closed: bool = True) -> Aggregate:
    return Aggregate("topic", MINUTE, start, TOPIC, closed, Figures(samples=1, records=records))


def project(
    model: ReadModel, envelopes: list[Envelope], restarted: bool = False, log: str = "backup"
) -> None:
    """Feed ``envelopes`` as the follower of ``log``'s log would, and store them."""
    model.on_events(log, envelopes, replay(envelopes), restarted)
    assert model.flush(), model.status()


def rows_of(model: ReadModel, log: str = "backup") -> list[Envelope]:
    return model.events.histories().get(log, [])


def test_events_are_stored_once_when_the_same_log_is_projected_after_a_restart(
    path: Path,
) -> None:
    log = history()
    model = ReadModel(url_of(path))
    project(model, log[:4])
    project(model, log)  # the view re-offers some, and the rest
    model.close()
    assert count(path, events) == len(log)

    again = ReadModel(url_of(path))  # restarted: reads the log from its start again
    assert again.known_log("backup") == "L1"
    project(again, log)
    assert count(path, events) == len(log), "a record read again was stored twice"
    assert [e.offset for e in rows_of(again)] == [e.offset for e in log]
    again.close()


def test_the_current_state_tables_hold_members_assignments_and_halts(path: Path) -> None:
    model = ReadModel(url_of(path))
    project(model, history())
    engine = create_engine(f"sqlite:///{path}")
    with engine.connect() as connection:
        assert connection.execute(select(drivers.c.driver, drivers.c.url)).all() == [
            ("d1", "http://d1:1")
        ]
        assert sorted(connection.execute(select(assignments.c.driver)).scalars()) == ["d1"] * 3
        halted = connection.execute(select(halts.c.topic, halts.c.partition, halts.c.kind)).all()
        assert halted == [("orders", 1, "conflict")]
    engine.dispose()
    model.close()


def test_a_restored_log_follows_the_lost_one_and_the_model_remembers_it(path: Path) -> None:
    lost = history()
    restored = [
        Envelope(LogStarted("L2", "L1", "test"), 1_800_000_000_000, "alice", None, 0),
        Envelope(FlowDisabled(FLOW), 1_800_000_001_000, "alice", None, 1),
    ]
    model = ReadModel(url_of(path))
    project(model, lost)
    project(model, restored, restarted=True)
    rows = [e.offset for e in rows_of(model)]
    assert rows == [e.offset for e in lost] + [len(lost), len(lost) + 1]
    assert model.known_log("backup") == "L2"
    model.close()

    again = ReadModel(url_of(path))  # a restart reads the restored log from offset 0
    project(again, restored)
    assert count(path, events) == len(lost) + 2
    again.close()


def test_closed_windows_are_stored_once_when_records_are_read_again_after_a_restart(
    path: Path,
) -> None:
    model = ReadModel(url_of(path))
    model.on_metric("backup", 0, 10, window(T0, 5, closed=False))
    model.on_metric("backup", 0, 11, window(T0, 7))
    model.on_metric("backup", 1, 4, TopicMapping("d1/a/1", T0, 0, FLOW, "orders", "p.orders"))
    assert model.flush()
    assert model.metrics.positions() == {"metrics|backup|0": 11, "metrics|backup|1": 4}
    assert [w.figures.records for w in model.windows("topic", TOPIC, MINUTE, 0, 2 * T0)] == [7]
    model.close()

    again = ReadModel(url_of(path))
    # Read again from the start, the window now says 7 and is skipped by position; a
    # late contribution closes it again with more in it and wins.
    again.on_metric("backup", 0, 11, window(T0, 7))
    assert again.flush() and again.metrics.flush() == 0
    again.on_metric("backup", 0, 12, window(T0, 9))
    again.on_metric("backup", 0, 13, window(T0 + MINUTE, 3))
    assert again.flush()
    stored = again.windows("topic", TOPIC, MINUTE, T0, T0 + 2 * MINUTE)
    assert [(w.start_ms, w.figures.records, w.closed) for w in stored] == [
        (T0, 9, True),
        (T0 + MINUTE, 3, True),
    ]
    assert count(path, metric_windows) == 2
    again.close()


def test_what_was_read_waits_and_is_written_when_the_database_answers_again(
    path: Path,
) -> None:
    model = ReadModel(url_of(path))
    log = history()
    project(model, log[:3])
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # nobody else reads or writes until COMMIT
    model.on_events("backup", log[3:], replay(log), False)
    model.on_metric("backup", 0, 1, window(T0, 4))
    assert not model.flush()
    status = model.status()
    assert status["status"] == "unreachable" and "database is locked" in str(status["error"])
    assert status["events_waiting"] == len(log) - 3 and status["windows_waiting"] == 1
    assert model.history({"backup": len(log)}) is None, "history must come from memory meanwhile"
    assert model.windows("topic", TOPIC, MINUTE, 0, 2 * T0) == []
    blocker.execute("COMMIT")
    blocker.close()

    assert model.flush()
    assert model.status()["status"] == "ok" and model.status()["up_to_date"]
    assert count(path, events) == len(log) and count(path, metric_windows) == 1
    found = model.history({"backup": len(log)})
    assert found is not None and [e.offset for e in found["backup"]] == [e.offset for e in log]
    model.close()


def test_a_restarted_gateway_answers_history_and_metric_series_from_sql(
    config: SrmConfig, path: Path
) -> None:
    lost = history()
    first = ReadModel(url_of(path))
    project(first, lost)  # the lost log, only in SQL now
    first.on_metric("backup", 0, 1, window(T0, 600))
    assert first.flush()
    first.close()

    restored = [Envelope(LogStarted("L2", "L1", "test"), 1_800_000_000_000, "bob", None, 0)]
    model = ReadModel(url_of(path))
    model.start()
    try:
        with served(config, MetricStore(), envelopes=restored, read_model=model) as gateway:
            for _ in range(100):
                if model.status()["up_to_date"] and model.history({"backup": 1}) is not None:
                    break
                model.stop.wait(0.05)
            _, audit = get(f"{gateway}/v1/audit?all=true")
            assert audit["total"] == len(lost) + 1, "the lost log's history comes from SQL"
            _, then = get(f"{gateway}/v1/state?at={lost[-1].at_ms}")
            assert then["logs"]["backup"]["state"] == replay(lost).to_json()
            _, series = get(
                f"{gateway}/v2/topic-metrics/primary/backup/orders/record-count"
                f"?from={T0}&to={T0 + MINUTE}"
            )
            assert [p["value"] for p in series["series"]] == [600]
            status, ready = get(f"{gateway}/readyz")
            assert status == 200 and ready["status"] == "ready"
            assert ready["read_model"]["status"] == "ok"
    finally:
        model.close()


def test_readyz_says_degraded_and_memory_answers_when_the_database_is_lost(
    config: SrmConfig, path: Path
) -> None:
    model = ReadModel(url_of(path))
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        with served(config, read_model=model) as gateway:
            blocker.execute("BEGIN EXCLUSIVE")
            assert not model.flush()
            status, ready = get(f"{gateway}/readyz")
            assert status == 200 and ready["status"] == "degraded"
            assert "read model database: " in ready["reason"]
            assert "database is locked" in ready["reason"]
            _, audit = get(f"{gateway}/v1/audit?all=true")
            assert audit["total"] == len(history()), "memory answers while SQL cannot"
            blocker.execute("COMMIT")
            assert model.flush()
            assert get(f"{gateway}/readyz")[1]["status"] == "ready"
    finally:
        blocker.close()
        model.close()


def test_state_tables_are_emptied_when_the_state_has_no_members(path: Path) -> None:
    model = ReadModel(url_of(path))
    project(model, history())
    model.on_events("backup", [], ControlState(), False)
    assert model.flush()
    assert count(path, drivers) == count(path, assignments) == count(path, halts) == 0
    model.close()


def test_two_gateways_sharing_a_database_store_each_row_once(path: Path) -> None:
    log = history()
    first, second = ReadModel(url_of(path)), ReadModel(url_of(path))
    project(first, log[:4])
    second.on_events("backup", log, replay(log), False)
    second.on_metric("backup", 0, 3, window(T0, 5))
    first.on_metric("backup", 0, 3, window(T0, 5))
    assert second.flush() and first.flush()
    project(first, log)
    assert count(path, events) == len(log) and count(path, metric_windows) == 1
    assert first.status()["status"] == second.status()["status"] == "ok"
    first.close()
    second.close()


def test_a_row_this_release_cannot_read_is_skipped_not_fatal(path: Path) -> None:
    from srm_common.adapters.sql.projection import ProjectedEvent

    log = history()
    model = ReadModel(url_of(path))
    project(model, log)
    newer = b'{"type": "flow.teleported", "version": 9, "at_ms": 1, "event": {}}'
    model.db.apply(
        [ProjectedEvent(len(log), 1, "flow.teleported", 9, None, None, "?", newer, "backup")]
    )
    model.db.apply(
        [ProjectedEvent(len(log) + 1, 2, "junk", 1, None, None, "?", b"\xff junk", "backup")]
    )
    assert [e.offset for e in rows_of(model)] == [e.offset for e in log]
    model.close()


def test_windows_older_than_their_keep_time_are_pruned(path: Path) -> None:
    from srm_api_gateway.metric_projection import KEEP_MS

    model = ReadModel(url_of(path))
    model.on_metric("backup", 0, 1, window(T0, 1))
    model.on_metric("backup", 0, 2, window(T0 + MINUTE, 2))
    assert model.flush() and count(path, metric_windows) == 2
    later = T0 + KEEP_MS[MINUTE] + MINUTE  # the first window is past its keep time now
    model.on_metric("backup", 0, 3, window(later, 3))
    assert model.flush()
    kept = model.windows("topic", TOPIC, MINUTE, 0, later + MINUTE)
    assert [w.start_ms for w in kept] == [T0 + MINUTE, later]
    model.close()
