"""A configuration and an event log for the gateway's tests (no Kafka)."""

from __future__ import annotations

from srm_common.control.events import (
    AssignmentChanged,
    DriverJoined,
    Envelope,
    Event,
    FlowEnabled,
    LogStarted,
    PartitionHalted,
    TaskConfigsGenerated,
    TopicsAllowed,
)

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
        TaskConfigsGenerated(
            FLOW, 1, ((("orders", 0), ("orders", 1)), (("payments", 0),)), (), True
        ),
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
