"""The ACLs the driver needs on the source and the target of one flow.

Part of :func:`srm_common.required_acls.required_acls` (the table of who needs what is
in that module's docstring).
"""

from __future__ import annotations

from srm_common.config.model import FlowConfig
from srm_common.domain.policy import IdentityReplicationPolicy, mm2_offsets_topic
from srm_common.metrics.raw import RAW_TOPIC
from srm_common.required_acls_grant import (
    GROUP_LOOKUP,
    READER_GROUP,
    TOPIC_WRITER,
    Grant,
    noted,
    topic_resources,
)


def flow_acls(flow: FlowConfig, grant: Grant) -> None:
    source, target = flow.source, flow.target
    policy = flow.replication_policy()
    if flow.emit_heartbeats_enabled:
        grant(
            target,
            "driver",
            "TOPIC",
            policy.heartbeats_topic(),
            TOPIC_WRITER,
            "heartbeat task writes here (srm_driver.heartbeats)",
        )
        grant(
            target,
            "driver",
            "CLUSTER",
            "kafka-cluster",
            ["IDEMPOTENT_WRITE"],
            "idempotent producers (copy, internal topics)",
        )
        grant(
            target,
            "driver",
            "TOPIC",
            RAW_TOPIC,
            ["CREATE", "WRITE", "DESCRIBE"],
            "raw metrics samples (srm_driver.raw_metrics), a heartbeat-only flow's too",
        )
    if not flow.enabled:
        return
    for alias in (source, target):  # internal topics, offset syncs, progress: read back
        grant(
            alias,
            "driver",
            "GROUP",
            READER_GROUP,
            ["DESCRIBE"],
            GROUP_LOOKUP.format(what="internal topic reader's"),
        )
    topics = topic_resources(flow.topics)
    if flow.heartbeats_replication_enabled:
        topics.append((policy.heartbeats_topic(), "LITERAL", None))
    for name, pattern, note in topics:
        why = "replicated topics: read and listed (copy, topic sync, config sync)"
        grant(
            source,
            "driver",
            "TOPIC",
            name,
            ["READ", "DESCRIBE", "DESCRIBE_CONFIGS"],
            noted(why, note),
            pattern,
        )
        grant(
            source,
            "coordinator",
            "TOPIC",
            name,
            ["DESCRIBE"],
            noted("discovery lists the source's topics (task planning)", note),
            pattern,
        )
    if isinstance(policy, IdentityReplicationPolicy):
        remote = [(name, pattern, note) for name, pattern, note in topics]
    else:
        remote = [(policy.format_remote_topic(source, ""), "PREFIXED", None)]
    for name, pattern, note in remote:
        grant(
            target,
            "driver",
            "TOPIC",
            name,
            [*TOPIC_WRITER, "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"],
            noted(
                "remote topics: created, grown, written, read back to check, configs"
                " synced (srm_driver.topic_sync, copying)",
                note,
            ),
            pattern,
        )
    grant(
        target,
        "driver",
        "TOPIC",
        mm2_offsets_topic(source),
        TOPIC_WRITER,
        "copy progress (srm_driver.progress_store)",
    )
    grant(
        target,
        "driver",
        "TOPIC",
        RAW_TOPIC,
        ["CREATE", "WRITE", "DESCRIBE"],
        "raw metrics samples (srm_driver.raw_metrics)",
    )
    if flow.offset_syncs_topic_location == "target":
        syncs_cluster, syncs_topic = target, policy.offset_syncs_topic(source)
    else:
        syncs_cluster, syncs_topic = source, policy.offset_syncs_topic(target)
    grant(
        syncs_cluster,
        "driver",
        "TOPIC",
        syncs_topic,
        TOPIC_WRITER,
        "offset syncs: written by the copy, read by checkpoints",
    )
    grant(
        syncs_cluster,
        "driver",
        "CLUSTER",
        "kafka-cluster",
        ["IDEMPOTENT_WRITE"],
        "idempotent producers (copy, internal topics)",
    )
    if flow.emit_checkpoints_enabled:
        grant(
            target,
            "driver",
            "TOPIC",
            policy.checkpoints_topic(source),
            TOPIC_WRITER,
            "checkpoints (srm_driver.checkpoints)",
        )
        group_ops = ["DESCRIBE", "READ"] if flow.sync_group_offsets_enabled else ["DESCRIBE"]
        for name, pattern, note in topic_resources(flow.groups):
            grant(
                source,
                "driver",
                "GROUP",
                name,
                ["DESCRIBE"],
                noted("checkpoints read the groups' committed offsets", note),
                pattern,
            )
            grant(
                source,
                "coordinator",
                "GROUP",
                name,
                ["DESCRIBE"],
                noted("discovery lists the source's groups", note),
                pattern,
            )
            grant(
                target,
                "driver",
                "GROUP",
                name,
                group_ops,
                noted(
                    "checkpoints look at the groups on the target (READ: "
                    "sync.group.offsets commits them)",
                    note,
                ),
                pattern,
            )
    if flow.sync_topic_acls_enabled:
        grant(
            source,
            "driver",
            "CLUSTER",
            "kafka-cluster",
            ["DESCRIBE"],
            "ACL sync lists the source's topic ACLs (srm_driver.acl_sync)",
        )
        grant(
            target,
            "driver",
            "CLUSTER",
            "kafka-cluster",
            ["DESCRIBE", "ALTER"],
            "ACL sync lists and creates topic ACLs; ALTER on the cluster can grant"
            " anything: set sync.topic.acls.enabled = false to do without it",
        )
