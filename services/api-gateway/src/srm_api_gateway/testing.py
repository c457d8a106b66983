"""A configuration and an event log for the gateway's tests (no Kafka)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from srm_common.adapters.http_auth import access_for
from srm_common.adapters.http_client import HttpCredentials
from srm_common.adapters.http_server import HttpServer
from srm_common.config.model import SrmConfig
from srm_common.control.events import (
    AssignmentChanged,
    DriverJoined,
    Envelope,
    Event,
    FlowEnabled,
    LogStarted,
    PartitionHalted,
    TopicsAllowed,
)
from srm_common.control.task_configs import task_configs
from srm_common.log_follower import LogFollower, LogSet
from srm_common.testing import InMemoryEventLog

from srm_api_gateway.http_api import create_app
from srm_api_gateway.metric_store import MetricStore
from srm_api_gateway.read_model import ReadModel

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:8", sasl.jaas.config: "secret-jaas-line"}
replication:
  tasks.max: 2
flows:
  primary->backup: {enabled: true, topics: [orders]}
  backup->primary: {enabled: false}
"""
FLOW = "primary->backup"


def history() -> list[Envelope]:
    """A log: the flow enabled with orders, 3 partitions over 2 tasks, d1 runs them, one
    partition halted."""
    events: list[Event] = [
        LogStarted("L1", None, ""),
        FlowEnabled(FLOW),
        TopicsAllowed(FLOW, ("orders", "payments")),
        task_configs(FLOW, 1, ((("orders", 0), ("orders", 1)), (("payments", 0),)), (), True),
        DriverJoined("d1", "http://d1:1", "host-1", "a1"),
        AssignmentChanged(
            1,
            {
                f"{FLOW}|MirrorSourceConnector-0": "d1",
                f"{FLOW}|MirrorSourceConnector-1": "d1",
                f"{FLOW}|MirrorHeartbeatConnector-0": "d1",
            },
            (),
        ),
        PartitionHalted(FLOW, "orders", 1, "conflict", "another writer at offset 7", "d1"),
    ]
    return [
        Envelope(event, 1_700_000_000_000 + 1000 * i, "operator@host", None, i)
        for i, event in enumerate(events)
    ]


def big_history(topics: int, per_topic: int, halted: int = 0) -> list[Envelope]:
    """A log of a whole cluster: the flow copies ``topics`` x ``per_topic`` partitions
    (topics ``t00000``...) over 2 tasks run by d1; the first ``halted`` partitions halted."""
    names = [f"t{i:05d}" for i in range(topics)]
    partitions = [(t, p) for t in names for p in range(per_topic)]
    events: list[Event] = [
        LogStarted("L1", None, ""),
        FlowEnabled(FLOW),
        TopicsAllowed(FLOW, ("t.*",)),
        task_configs(FLOW, 1, (tuple(partitions[0::2]), tuple(partitions[1::2])), (), True),
        DriverJoined("d1", "http://d1:1", "host-1", "a1"),
        AssignmentChanged(
            1,
            {
                f"{FLOW}|MirrorSourceConnector-0": "d1",
                f"{FLOW}|MirrorSourceConnector-1": "d1",
                f"{FLOW}|MirrorHeartbeatConnector-0": "d1",
            },
            (),
        ),
    ]
    for topic, partition in partitions[:halted]:
        events.append(PartitionHalted(FLOW, topic, partition, "conflict", "another writer", "d1"))
    return [
        Envelope(event, 1_700_000_000_000 + i, "operator@host", None, i)
        for i, event in enumerate(events)
    ]


RELAY_TOKEN = "the-gateways-own-token-0123456789"


@contextmanager
def served(
    config: SrmConfig,
    store: MetricStore | None = None,
    *,
    envelopes: list[Envelope] | None = None,
    token: str | None = None,
    read_model: ReadModel | None = None,
) -> Iterator[str]:
    """The gateway on a free port over ``envelopes`` (default :func:`history`) as
    backup's log (primary's is empty) and ``store``, taking commands with ``token``,
    projecting into ``read_model``, ready; its URL."""
    logs = {"backup": InMemoryEventLog(), "primary": InMemoryEventLog()}
    logs["backup"].put(history() if envelopes is None else envelopes)

    def follower(name: str) -> LogFollower:
        on_fold = None
        if read_model is not None:
            on_fold = lambda folded: read_model.on_fold(name, folded)  # noqa: E731
        return LogFollower(logs[name].reader, name=name, on_fold=on_fold, keep=True)

    view = LogSet({name: follower(name) for name in logs})
    view.start()
    # ``token`` is the principal "ops"'s; the gateway relays with "api-gateway"'s.
    access = access_for({"ops": token}) if token else None
    relay = HttpCredentials(RELAY_TOKEN)
    app = create_app(config, view, store, credentials=relay, read_model=read_model, access=access)
    server = HttpServer(app, host="127.0.0.1", port=0, name="test")
    server.start()
    waiting = threading.Event()
    for _ in range(200):
        if view.ready:
            break
        waiting.wait(0.05)
    try:
        yield server.url
    finally:
        server.stop()
        view.close()


def get(url: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
