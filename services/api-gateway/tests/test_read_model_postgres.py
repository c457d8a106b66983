"""The read model on a real PostgreSQL server, where one is given (``SRM_TEST_POSTGRES_URL``,
e.g. postgresql+psycopg://srm:PASSWORD@127.0.0.1:5432/srm; the compose check covers the
containers): migrations from an empty database, events and windows stored once across a
restart (PostgreSQL's ON CONFLICT path), srm-control's read-only open. The tables of the
database given are dropped first: give a database for tests."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import create_engine, text
from srm_api_gateway.metric_store import MINUTE
from srm_api_gateway.read_model import ReadModel
from srm_api_gateway.testing import FLOW, history
from srm_common.adapters.sql.projection import SqlProjection
from srm_common.adapters.sql.schema import VERSION_TABLE, metadata
from srm_common.control.state import replay
from srm_common.metrics.aggregate import Aggregate, Figures

URL = os.environ.get("SRM_TEST_POSTGRES_URL", "")
pytestmark = pytest.mark.skipif(not URL, reason="no SRM_TEST_POSTGRES_URL: no PostgreSQL given")
TOPIC = {"flow": FLOW, "topic": "orders"}
T0 = 1_700_000_040_000


@pytest.fixture
def url() -> str:
    engine = create_engine(URL)
    with engine.begin() as connection:
        for table in [*metadata.sorted_tables, VERSION_TABLE]:
            name = table if isinstance(table, str) else table.name
            connection.execute(text(f"DROP TABLE IF EXISTS {name}"))
    engine.dispose()
    return URL


def test_postgres_stores_events_and_windows_once_across_a_restart(url: str) -> None:
    log = history()
    model = ReadModel(url)
    model.on_events("backup", log, replay(log), False)
    model.on_metric("backup", 0, 5, Aggregate("topic", MINUTE, T0, TOPIC, True, Figures(records=7)))
    assert model.flush(), model.status()
    model.close()

    again = ReadModel(url)
    again.on_events("backup", log, replay(log), False)
    again.on_metric("backup", 0, 5, Aggregate("topic", MINUTE, T0, TOPIC, True, Figures(records=7)))
    again.on_metric("backup", 0, 6, Aggregate("topic", MINUTE, T0, TOPIC, True, Figures(records=9)))
    assert again.flush(), again.status()
    assert again.db.status().events == len(log)
    stored = again.windows("topic", TOPIC, MINUTE, T0, T0 + MINUTE)
    assert [(w.start_ms, w.figures.records) for w in stored] == [(T0, 9)]
    again.close()
    with SqlProjection(url, migrate=False) as reader:
        assert [o for o, _ in reader.values_until(log="backup")] == [e.offset for e in log]
