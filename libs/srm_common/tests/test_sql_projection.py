"""SQL projection of the control log: migrations, apply/replay, history filters, errors."""

from __future__ import annotations

import io
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text
from srm_common.adapters.sql import ProjectedEvent, ProjectionStatus, SqlProjection
from srm_common.adapters.sql.projection import MIGRATIONS
from srm_common.adapters.sql.schema import VERSION_TABLE, metadata
from srm_common.errors import SrmError


def event(offset: int, at_ms: int, flow: str | None = "A->B", **changes: object) -> ProjectedEvent:
    fields: dict[str, object] = {
        "offset": offset,
        "at_ms": at_ms,
        "type": "FlowPaused",
        "version": 1,
        "by": "alice",
        "flow": flow,
        "summary": f"flow {flow} paused by alice",
        # Not UTF-8, with NUL and trailing zeros: must come back byte for byte.
        "value": bytes([0, 255, offset % 256, 0x80, 0, 0]),
    }
    fields.update(changes)
    return ProjectedEvent(**fields)  # type: ignore[arg-type]


EVENTS = [
    event(0, 1_000, type="FlowCreated", by=None),
    event(1, 2_000, flow="A->C"),
    event(4, 3_000),  # gaps in offsets are normal (compaction, transaction markers)
    event(7, 4_000, flow=None, type="DriverJoined"),
]


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'projection.db'}"


@pytest.fixture
def projection(url: str):
    with SqlProjection(url) as opened:
        yield opened


def test_migrations_create_schema_when_database_is_empty(url: str) -> None:
    SqlProjection(url).close()
    inspector = inspect(create_engine(url))
    assert set(inspector.get_table_names()) == {
        "srm_events",
        "srm_positions",
        "srm_metric_windows",
        "srm_drivers",
        "srm_assignments",
        "srm_halts",
        VERSION_TABLE,
    }
    columns = {column["name"] for column in inspector.get_columns("srm_events")}
    assert columns == {
        "log",
        "log_offset",
        "at_ms",
        "type",
        "version",
        "actor",
        "flow",
        "summary",
        "value",
    }
    indexed = {tuple(index["column_names"]) for index in inspector.get_indexes("srm_events")}
    assert indexed == {("at_ms",), ("flow",)}


def test_reopen_keeps_rows_when_schema_is_already_at_head(url: str) -> None:
    with SqlProjection(url) as first:
        first.apply(EVENTS)
    with SqlProjection(url) as again:
        assert again.status() == ProjectionStatus(events=4, last_offset=7)


def test_migrated_schema_matches_metadata_when_compared_like_autogenerate(url: str) -> None:
    SqlProjection(url).close()
    with create_engine(url).connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "version_table": VERSION_TABLE}
        )
        assert compare_metadata(context, metadata) == []


def test_migration_renders_portable_ddl_when_target_is_postgresql() -> None:
    # Offline mode needs only the dialect, not a server or driver.
    out = io.StringIO()
    config = Config(output_buffer=out)
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("path_separator", "os")
    config.set_main_option("sqlalchemy.url", "postgresql://srm@db.example/srm")
    command.upgrade(config, "head", sql=True)
    ddl = out.getvalue()
    assert "log_offset BIGINT NOT NULL" in ddl
    assert "value BYTEA NOT NULL" in ddl
    assert "CREATE INDEX ix_srm_events_flow ON srm_events (flow)" in ddl


def test_upgrade_keeps_rows_when_database_was_projected_by_a_coordinator(url: str) -> None:
    # Revision 0001 is the schema coordinators wrote before the gateway owned the model.
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("path_separator", "os")
    engine = create_engine(url)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    assert set(inspect(engine).get_table_names()) == {"srm_events", VERSION_TABLE}
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO srm_events VALUES (3, 1000, 'flow.enabled', 1, 'alice', 'A->B',"
                " 'flow A->B enabled', x'7b7d')"
            )
        )
    engine.dispose()
    with SqlProjection(url) as upgraded:
        assert upgraded.status() == ProjectionStatus(events=1, last_offset=3)
        assert upgraded.values_until() == [(3, b"{}")]
        assert upgraded.values_by_log() == {"": [(3, b"{}")]}, "the earlier single log: ''"
    assert "srm_metric_windows" in inspect(create_engine(url)).get_table_names()


def test_each_log_keeps_its_own_offsets(projection: SqlProjection) -> None:
    """Logs of two targets side by side: the same offsets, each log skipping only what
    it stored itself."""
    rows = [replace(e, log=log) for log in ("backup", "dr") for e in EVENTS]
    assert projection.apply(rows) == 2 * len(EVENTS)
    assert projection.apply(rows) == 0
    assert projection.last_offset("backup") == projection.last_offset("dr") == 7
    assert projection.last_offset() == -1, "nothing of an earlier release's log"
    later = replace(EVENTS[-1], offset=9, log="dr")
    assert projection.apply([later]) == 1
    by_log = projection.values_by_log()
    assert sorted(by_log) == ["backup", "dr"]
    assert [o for o, _ in by_log["dr"]] == [
        *[e.offset for e in sorted(EVENTS, key=lambda e: e.offset)],
        9,
    ]


def test_readers_refuse_a_database_without_the_read_model(url: str) -> None:
    with pytest.raises(SrmError, match="holds no srm_events table; give the database the"):
        SqlProjection(url, migrate=False)
    SqlProjection(url).close()
    with SqlProjection(url, migrate=False) as reader:
        assert reader.last_offset() == -1


def test_last_offset_is_minus_one_when_empty(projection: SqlProjection) -> None:
    assert projection.last_offset() == -1
    assert projection.status() == ProjectionStatus(events=0, last_offset=-1)
    assert projection.history() == []


def test_apply_stores_events_in_offset_order_when_given_unordered(
    projection: SqlProjection,
) -> None:
    assert projection.apply(reversed(EVENTS)) == 4
    assert projection.last_offset() == 7
    assert projection.history() == EVENTS


def test_apply_inserts_nothing_when_events_are_reapplied(projection: SqlProjection) -> None:
    projection.apply(EVENTS[:2])
    assert projection.apply(EVENTS) == 2
    assert projection.apply(EVENTS) == 0
    assert projection.apply([]) == 0
    assert projection.history() == EVENTS


def test_apply_keeps_first_copy_when_batch_repeats_an_offset(projection: SqlProjection) -> None:
    assert projection.apply([EVENTS[0], EVENTS[0], EVENTS[1]]) == 2
    assert projection.history() == EVENTS[:2]


def test_history_filters_by_time_and_flow_when_asked(projection: SqlProjection) -> None:
    projection.apply(EVENTS)
    assert projection.history(since_ms=2_000) == EVENTS[1:]
    assert projection.history(until_ms=2_000) == EVENTS[:2]
    assert projection.history(since_ms=2_000, until_ms=3_000) == EVENTS[1:3]
    assert projection.history(flow="A->B") == [EVENTS[0], EVENTS[2]]
    assert projection.history(flow="A->B", since_ms=1_001) == [EVENTS[2]]
    assert projection.history(flow="nope") == []


def test_history_returns_oldest_first_when_limited(projection: SqlProjection) -> None:
    projection.apply(EVENTS)
    assert projection.history(limit=2) == EVENTS[:2]
    assert projection.history(limit=0) == []
    assert projection.history(since_ms=3_000, limit=10) == EVENTS[2:]


def test_history_refuses_negative_limit(projection: SqlProjection) -> None:
    with pytest.raises(SrmError, match="limit must be 0 or more, got -1"):
        projection.history(limit=-1)


def test_values_until_returns_stored_bytes_exactly(projection: SqlProjection) -> None:
    projection.apply(EVENTS)
    assert projection.values_until() == [(e.offset, e.value) for e in EVENTS]
    replay = projection.values_until(until_ms=2_000)
    assert replay == [(0, EVENTS[0].value), (1, EVENTS[1].value)]
    assert all(type(value) is bytes for _, value in replay)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("not a url", "not a database URL"),
        ("nodialect://user:s3cret@host/db", "unknown database or driver 'nodialect'"),
        ("sqlite:////nonexistent/dir/srm.db", "unable to open database file"),
        ("postgresql+nodriver://user:s3cret@host/db", "driver 'postgresql+nodriver'"),
        ("postgresql://user:s3cret@host:port/db", "malformed URL"),
    ],
)
def test_bad_url_gives_one_clean_line_when_opening(url: str, reason: str) -> None:
    with pytest.raises(SrmError) as caught:
        SqlProjection(url)
    message = str(caught.value)
    assert message.startswith("cannot open projection database ")
    assert reason in message
    assert message.endswith("(the gateway's --db-url; srm-control's --db / --from-db)")
    assert "\n" not in message
    assert "s3cret" not in message


def test_open_refuses_database_when_a_newer_schema_revision_is_stamped(url: str) -> None:
    SqlProjection(url).close()
    with create_engine(url).begin() as connection:
        connection.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = '9999'"))
    with pytest.raises(SrmError, match="schema this SRM version does not know .*'9999'"):
        SqlProjection(url)


def test_missing_driver_names_url_without_password_when_opening(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Whether a PostgreSQL driver is installed varies; hide it so the test does not.
    monkeypatch.setitem(sys.modules, "psycopg2", None)
    with pytest.raises(SrmError) as caught:
        SqlProjection("postgresql+psycopg2://srm:s3cret@db.example:5432/srm")
    message = str(caught.value)
    assert "postgresql+psycopg2://srm:***@db.example:5432/srm" in message
    assert "driver not installed" in message
    assert "s3cret" not in message
