"""The ACLs of the control path (coordinators, drivers' log reads) and of the metrics path.

Part of :func:`srm_common.required_acls.required_acls` (the table of who needs what is
in that module's docstring).
"""

from __future__ import annotations

from srm_common.config.control import ControlSettings
from srm_common.config.model import SrmConfig
from srm_common.metrics.aggregate import AGGREGATED_TOPIC, DEAD_TOPIC
from srm_common.metrics.raw import RAW_TOPIC
from srm_common.required_acls_grant import (
    DEFAULT_AGGREGATOR_ID,
    GROUP_LOOKUP,
    READER_GROUP,
    Grant,
)


def control_acls(settings: ControlSettings, grant: Grant) -> None:
    alias = settings.cluster
    events, drivers, election = (
        settings.events_topic,
        settings.drivers_topic,
        settings.election_topic,
    )
    grant(
        alias,
        "coordinator",
        "TOPIC",
        events,
        ["CREATE", "WRITE", "READ", "DESCRIBE", "DESCRIBE_CONFIGS"],
        "the event log: created, checked, appended by the leader, read by all",
    )
    grant(
        alias,
        "coordinator",
        "TOPIC",
        drivers,
        ["CREATE", "READ", "DESCRIBE"],
        "driver heartbeats (membership)",
    )
    grant(
        alias,
        "coordinator",
        "TOPIC",
        election,
        ["CREATE", "READ", "DESCRIBE"],
        "leader election (srm_coordinator.election)",
    )
    grant(
        alias,
        "coordinator",
        "GROUP",
        settings.election_group,
        ["READ", "DESCRIBE"],
        "the coordinators' election group",
    )
    grant(
        alias,
        "coordinator",
        "TRANSACTIONAL_ID",
        settings.transactional_id,
        ["WRITE", "DESCRIBE"],
        "the leader's transactional writer fences an old leader",
    )
    grant(
        alias,
        "coordinator",
        "CLUSTER",
        "kafka-cluster",
        ["IDEMPOTENT_WRITE"],
        "the event log writer is idempotent",
    )
    grant(
        alias,
        "driver",
        "TOPIC",
        events,
        ["READ", "DESCRIBE"],
        "drivers fold the event log (srm_driver.control)",
    )
    grant(alias, "driver", "TOPIC", drivers, ["WRITE", "DESCRIBE"], "drivers send heartbeats")
    grant(
        alias,
        "driver",
        "TOPIC",
        election,
        ["DESCRIBE"],
        "drivers check the control topics' shape at start",
    )
    grant(
        alias,
        "api-gateway",
        "TOPIC",
        events,
        ["READ", "DESCRIBE"],
        "the gateway projects the event log",
    )
    # Every reader of the event log is a librdkafka consumer with a group id of its own
    # (srm_common.adapters.event_log_reader): it commits nothing, but looks its group up.
    for service in ("coordinator", "driver", "api-gateway"):
        grant(
            alias,
            service,
            "GROUP",
            f"{settings.prefix}.reader.",
            ["DESCRIBE"],
            GROUP_LOOKUP.format(what="event log reader's"),
            "PREFIXED",
        )
    grant(
        alias,
        "coordinator",
        "GROUP",
        f"{settings.prefix}.beats.",
        ["DESCRIBE"],
        GROUP_LOOKUP.format(what="heartbeat reader's"),
        "PREFIXED",
    )


def legacy_acls(settings: ControlSettings, grant: Grant) -> None:
    """The single log of an earlier release: a target's first leader reads it to move its
    flows' configuration and marks it (srm_coordinator.migration); the gateway shows its
    history. Not needed by an installation that never ran one."""
    alias, events = settings.cluster, settings.events_topic
    grant(
        alias,
        "coordinator",
        "TOPIC",
        events,
        ["READ", "WRITE", "DESCRIBE"],
        "the single log of an earlier release: read and marked once per target (migration)",
    )
    grant(
        alias,
        "coordinator",
        "TRANSACTIONAL_ID",
        settings.transactional_id,
        ["WRITE", "DESCRIBE"],
        "marking the old log fences its old leader (migration)",
    )
    grant(
        alias,
        "api-gateway",
        "TOPIC",
        events,
        ["READ", "DESCRIBE"],
        "the gateway shows the old log's history",
    )
    for service in ("coordinator", "api-gateway"):
        grant(
            alias,
            service,
            "GROUP",
            f"{settings.prefix}.reader.",
            ["DESCRIBE"],
            GROUP_LOOKUP.format(what="event log reader's"),
            "PREFIXED",
        )


def metrics_acls(config: SrmConfig, grant: Grant) -> None:
    app_id = config.extra.get("srm.metrics.aggregator.id", DEFAULT_AGGREGATOR_ID).strip()
    for alias in sorted({flow.target for flow in config.flows.values()}):
        grant(
            alias,
            "metrics-aggregator",
            "TOPIC",
            RAW_TOPIC,
            ["CREATE", "READ", "DESCRIBE"],
            "raw samples folded (srm_metrics_aggregator.app)",
        )
        grant(
            alias,
            "metrics-aggregator",
            "TOPIC",
            app_id,
            ["CREATE", "READ", "WRITE", "DESCRIBE"],
            "its own topics and changelogs (Faust's, named after the id, too)",
            "PREFIXED",
        )
        for topic in (AGGREGATED_TOPIC, DEAD_TOPIC):
            grant(
                alias,
                "metrics-aggregator",
                "TOPIC",
                topic,
                ["CREATE", "WRITE", "DESCRIBE"],
                "aggregated windows and records not folded",
            )
        grant(
            alias,
            "metrics-aggregator",
            "GROUP",
            READER_GROUP,
            ["DESCRIBE"],
            GROUP_LOOKUP.format(what="raw topic reader's"),
        )
        grant(
            alias,
            "metrics-aggregator",
            "GROUP",
            app_id,
            ["READ", "DESCRIBE"],
            "the aggregator instances' consumer group",
        )
        grant(
            alias,
            "api-gateway",
            "TOPIC",
            AGGREGATED_TOPIC,
            ["READ", "DESCRIBE"],
            "the gateway follows the aggregated metrics",
        )
