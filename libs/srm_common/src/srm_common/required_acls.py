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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from srm_common.config.control import control_plane
from srm_common.config.model import SrmConfig
from srm_common.config.security import read_security
from srm_common.domain.acls import AclBinding, PatternType, ResourceType
from srm_common.required_acls_flows import flow_acls
from srm_common.required_acls_services import control_acls, legacy_acls, metrics_acls

SERVICES = ("driver", "coordinator", "metrics-aggregator", "api-gateway")
UNKNOWN_PRINCIPAL = "User:<principal of {alias}>"


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
        flow_acls(flow, grant)
    for settings in plane.logs.values():
        control_acls(settings, grant)
    legacy_acls(plane.legacy, grant)
    metrics_acls(config, grant)
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


def _principal(config: SrmConfig, alias: str, service: str, given: Mapping[str, str]) -> str:
    return (
        given.get(f"{service}@{alias}")
        or given.get(alias)
        or principal_of(config, alias)
        or UNKNOWN_PRINCIPAL.format(alias=alias)
    )
