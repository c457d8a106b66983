"""The least-privilege ACLs each of our services needs on each cluster, from a configuration.

``srm-control acls --print`` prints them (:mod:`srm_common.acl_render`); the secured
integration tests grant exactly these. Read from the code, not guessed: every topic,
group and transactional id below is one a service of this repository uses (the module
that uses it is named in ``why``).

Who is asked for what (flow ``S->T``, default policy; ``<p>`` is
``srm.control.topic.prefix``, ``<id>`` is ``srm.metrics.aggregator.id``; ``legacy`` is
``srm.control.cluster``, where an earlier release kept its single log)::

    cluster  service      resource                               operations
    S        driver       replicated topics (from `topics`)      READ DESCRIBE DESCRIBE_CONFIGS
    S        driver       groups (from `groups`; checkpoints)    DESCRIBE
    S        driver       mm2-offset-syncs.T.internal (location  CREATE WRITE READ DESCRIBE
                          source) + IDEMPOTENT_WRITE on S
    S        driver       cluster (sync.topic.acls on)           DESCRIBE
    T        driver       S.* (PREFIXED; identity: the topics)   CREATE WRITE READ DESCRIBE ALTER
                                                                 DESCRIBE_CONFIGS ALTER_CONFIGS
    T        driver       heartbeats, S.checkpoints.internal,    CREATE WRITE READ DESCRIBE
                          mm2-offsets.S.internal, srm-metrics-raw.internal
    T        driver       groups (checkpoints, group sync)       DESCRIBE (+READ with group sync)
    T        driver       cluster                                IDEMPOTENT_WRITE (+DESCRIBE ALTER
                                                                 with sync.topic.acls)
    S        coordinator  replicated topics, groups (discovery)  DESCRIBE
    T        coordinator  <p>.log/.beats/.leader.internal        CREATE READ DESCRIBE (+WRITE,
                                                                 DESCRIBE_CONFIGS on the log)
    T        coordinator  transactional id <p>.log-leader        WRITE DESCRIBE
    T        coordinator  group <p>.leaders, cluster             READ DESCRIBE / IDEMPOTENT_WRITE
    T        driver       <p>.log.internal, <p>.leader.internal  READ DESCRIBE / DESCRIBE
    T        driver       <p>.beats.internal                     WRITE DESCRIBE
    legacy   coordinator  <p>.events.internal (an earlier        READ WRITE DESCRIBE, transactional
                          release's single log: moved, marked)   id <p>.coordinator
    T        aggregator   srm-metrics-raw.internal               CREATE READ DESCRIBE
    T        aggregator   <id> (PREFIXED: its topics, Faust's)   CREATE READ WRITE DESCRIBE
    T        aggregator   srm-metrics-aggregated/-dead.internal  CREATE WRITE DESCRIBE
    T        aggregator   group <id>                             READ DESCRIBE
    T        gateway      srm-metrics-aggregated.internal        READ DESCRIBE
    T        gateway      <p>.log.internal (legacy: .events)     READ DESCRIBE
    T        all readers  group <p>.reader. (PREFIXED)            DESCRIBE (group lookup)
    T        coordinator  group <p>.beats. (PREFIXED)             DESCRIBE (group lookup)
    S, T     driver       group srm-reader (+ the aggregator's)  DESCRIBE (group lookup)

Kafka's ACLs cannot say "matches this regex": a ``topics``/``groups`` pattern becomes a
literal name when it has no regex character (``orders``, ``billing\\.eu``), a PREFIXED
name when it is ``<plain>.*`` (``orders-.*``), and the wildcard ``*`` otherwise (noted,
so an operator can narrow it). Exclusions cannot be expressed at all: the ACLs allow at
least what the flow reads. Principals come from each cluster's connection settings
(the ``username`` of ``sasl.jaas.config``; ``User:ANONYMOUS`` on PLAINTEXT); an SSL
certificate's principal cannot be known from the configuration and must be given
(``principals``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from srm_common.config.control import ControlSettings, control_plane
from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.config.security import read_security
from srm_common.domain.acls import AclBinding, PatternType, ResourceType
from srm_common.domain.policy import IdentityReplicationPolicy, mm2_offsets_topic
from srm_common.metrics.aggregate import AGGREGATED_TOPIC, DEAD_TOPIC
from srm_common.metrics.raw import RAW_TOPIC

SERVICES = ("driver", "coordinator", "metrics-aggregator", "api-gateway")
DEFAULT_AGGREGATOR_ID = "srm-metrics-aggregator"
"""``srm.metrics.aggregator.id``'s default (the aggregator's settings use the same)."""

UNKNOWN_PRINCIPAL = "User:<principal of {alias}>"

_TOPIC_WRITER = ("CREATE", "WRITE", "READ", "DESCRIBE")
# librdkafka's consumers look their group's coordinator up (FindCoordinator: DESCRIBE on
# the group) even when they only assign partitions and commit nothing.
_GROUP_LOOKUP = "the {what} consumer group is looked up (FindCoordinator), nothing committed"
READER_GROUP = "srm-reader"
"""The group id of :mod:`srm_common.adapters.kafka_reader`'s consumers (commits nothing)."""
_REGEX_CHARS = re.compile(r"[\\^$|?*+()\[\]{}]")


class _Grant(Protocol):
    def __call__(
        self,
        cluster: str,
        service: str,
        resource: ResourceType,
        name: str,
        operations: Iterable[str],
        why: str,
        pattern: PatternType = "LITERAL",
    ) -> None: ...


@dataclass(frozen=True, order=True)
class RequiredAcl:
    """One ACL one service needs on one cluster, and why (a sentence naming the code)."""

    cluster: str
    service: str
    binding: AclBinding
    why: str


def required_acls(
    config: SrmConfig, principals: Mapping[str, str] | None = None
) -> list[RequiredAcl]:
    """Every ACL our services need for ``config``, sorted by cluster, service, resource.

    ``principals`` maps a cluster alias (or ``<service>@<alias>``, which wins) to the
    principal to grant (``User:srm``); unset, the principal comes from the cluster's
    connection settings, or is the placeholder :data:`UNKNOWN_PRINCIPAL` when they do not
    say it (SSL client certificates). Duplicates are merged (one binding, the first why).
    """
    given = dict(principals or {})
    rows: dict[tuple[str, str, AclBinding], str] = {}

    def grant(
        cluster: str,
        service: str,
        resource: ResourceType,
        name: str,
        operations: Iterable[str],
        why: str,
        pattern: PatternType = "LITERAL",
    ) -> None:
        principal = _principal(config, cluster, service, given)
        for operation in operations:
            binding = AclBinding(resource, name, pattern, principal, "*", operation, "ALLOW")
            rows.setdefault((cluster, service, binding), why)

    plane = control_plane(config)
    for flow in config.flows.values():
        _flow_acls(flow, grant)
    for settings in plane.logs.values():
        _control_acls(settings, grant)
    _legacy_acls(plane.legacy, grant)
    _metrics_acls(config, grant)
    return sorted(RequiredAcl(c, s, b, why) for (c, s, b), why in rows.items())


def principal_of(config: SrmConfig, alias: str) -> str | None:
    """The principal the connection settings of ``alias`` authenticate as, if they say:
    the SASL login's user, ``User:ANONYMOUS`` on PLAINTEXT, None for a TLS client
    certificate (its name is not in the configuration) or a login without a user name."""
    try:
        security = read_security(config.cluster(alias).client)
    except ValueError:
        return None  # refused when the configuration loaded; nothing to say here
    if security.uses_sasl:
        return f"User:{security.username}" if security.username else None
    if security.uses_tls:
        return None
    return "User:ANONYMOUS"


def topic_resources(patterns: Iterable[str]) -> list[tuple[str, PatternType, str | None]]:
    """``topics``/``groups`` patterns as ACL resources: (name, pattern type, note)."""
    out: list[tuple[str, PatternType, str | None]] = []
    for pattern in patterns:
        plain = pattern.replace("\\.", ".")
        if pattern in (".*", ".+"):
            out.append(("*", "LITERAL", None))
        elif not _REGEX_CHARS.search(plain.replace(".", "")):
            out.append((plain, "LITERAL", None))
        elif pattern.endswith(".*") and not _REGEX_CHARS.search(pattern[:-2].replace("\\.", "")):
            prefix = pattern[:-2].replace("\\.", ".")
            # An unescaped '.' in the prefix matches any character: not a prefix of names.
            if "." not in pattern[:-2].replace("\\.", ""):
                out.append((prefix, "PREFIXED", None))
            else:
                out.append(("*", "LITERAL", f"pattern {pattern!r} has no exact ACL form"))
        else:
            out.append(("*", "LITERAL", f"pattern {pattern!r} has no exact ACL form"))
    return out


# --- per area -----------------------------------------------------------------------------


def _flow_acls(flow: FlowConfig, grant: _Grant) -> None:
    source, target = flow.source, flow.target
    policy = flow.replication_policy()
    if flow.emit_heartbeats_enabled:
        grant(
            target,
            "driver",
            "TOPIC",
            policy.heartbeats_topic(),
            _TOPIC_WRITER,
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
            _GROUP_LOOKUP.format(what="internal topic reader's"),
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
            _noted(why, note),
            pattern,
        )
        grant(
            source,
            "coordinator",
            "TOPIC",
            name,
            ["DESCRIBE"],
            _noted("discovery lists the source's topics (task planning)", note),
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
            [*_TOPIC_WRITER, "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"],
            _noted(
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
        _TOPIC_WRITER,
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
        _TOPIC_WRITER,
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
            _TOPIC_WRITER,
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
                _noted("checkpoints read the groups' committed offsets", note),
                pattern,
            )
            grant(
                source,
                "coordinator",
                "GROUP",
                name,
                ["DESCRIBE"],
                _noted("discovery lists the source's groups", note),
                pattern,
            )
            grant(
                target,
                "driver",
                "GROUP",
                name,
                group_ops,
                _noted(
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


def _control_acls(settings: ControlSettings, grant: _Grant) -> None:
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
            _GROUP_LOOKUP.format(what="event log reader's"),
            "PREFIXED",
        )
    grant(
        alias,
        "coordinator",
        "GROUP",
        f"{settings.prefix}.beats.",
        ["DESCRIBE"],
        _GROUP_LOOKUP.format(what="heartbeat reader's"),
        "PREFIXED",
    )


def _legacy_acls(settings: ControlSettings, grant: _Grant) -> None:
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
            _GROUP_LOOKUP.format(what="event log reader's"),
            "PREFIXED",
        )


def _metrics_acls(config: SrmConfig, grant: _Grant) -> None:
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
            _GROUP_LOOKUP.format(what="raw topic reader's"),
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


# --- helpers ------------------------------------------------------------------------------


def _principal(config: SrmConfig, alias: str, service: str, given: Mapping[str, str]) -> str:
    return (
        given.get(f"{service}@{alias}")
        or given.get(alias)
        or principal_of(config, alias)
        or UNKNOWN_PRINCIPAL.format(alias=alias)
    )


def _noted(why: str, note: str | None) -> str:
    return f"{why}; {note}: narrow it by hand" if note else why
