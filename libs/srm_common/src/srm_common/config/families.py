"""Key families SRM passes to Kafka clients or Connect: connection keys, client prefixes.

Kafka has hundreds of client keys, so they are recognised by family, not listed: any key
under a client prefix is accepted; ``ssl.*``/``sasl.*`` keys close to a real Kafka key
are reported as typos, others pass (plugins define their own).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

SUGGESTION_CUTOFF = 0.85
"""difflib ratio above which an unknown key is taken for a typo of a known one."""
FOREIGN_SUGGESTION_CUTOFF = 0.9
"""Stricter ratio for keys in a pass-through family (``task.max`` is still ``tasks.max``)."""

BOOTSTRAP_SERVERS = "bootstrap.servers"
SECURITY_PROTOCOL = "security.protocol"
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
CLIENT_ROLES = ("consumer", "producer", "admin")

SSL_KEYS = frozenset(
    "ssl." + name
    for name in (
        "protocol provider cipher.suites enabled.protocols keystore.type keystore.location"
        " keystore.password key.password keystore.key keystore.certificate.chain"
        " truststore.type truststore.location truststore.password truststore.certificates"
        " keymanager.algorithm trustmanager.algorithm endpoint.identification.algorithm"
        " secure.random.implementation engine.factory.class"
    ).split()
)
SASL_KEYS = frozenset(
    "sasl." + name
    for name in (
        "mechanism jaas.config kerberos.service.name kerberos.kinit.cmd"
        " kerberos.ticket.renew.window.factor kerberos.ticket.renew.jitter"
        " kerberos.min.time.before.relogin login.refresh.window.factor"
        " login.refresh.window.jitter login.refresh.min.period.seconds"
        " login.refresh.buffer.seconds login.callback.handler.class login.class"
        " client.callback.handler.class login.connect.timeout.ms login.read.timeout.ms"
        " login.retry.backoff.max.ms login.retry.backoff.ms oauthbearer.scope.claim.name"
        " oauthbearer.sub.claim.name oauthbearer.token.endpoint.url"
        " oauthbearer.jwks.endpoint.url oauthbearer.jwks.endpoint.refresh.ms"
        " oauthbearer.jwks.endpoint.retry.backoff.max.ms"
        " oauthbearer.jwks.endpoint.retry.backoff.ms oauthbearer.clock.skew.seconds"
        " oauthbearer.expected.audience oauthbearer.expected.issuer"
    ).split()
)
CONNECTION_KEYS = frozenset({BOOTSTRAP_SERVERS, SECURITY_PROTOCOL}) | SSL_KEYS | SASL_KEYS
"""MM2's ``MirrorClientConfig.CLIENT_CONFIG_DEF`` family: per cluster, copied to every client."""

FLOW_CLIENT_PREFIXES = (
    "producer.override.",  # before "producer.": Connect's per-connector producer overrides
    "source.consumer.",
    "source.producer.",
    "source.admin.",
    "target.consumer.",
    "target.producer.",
    "target.admin.",
    "consumer.",
    "producer.",
    "admin.",
)
"""Client prefixes that are meaningful at top and flow level (see resolve/clients)."""

FOREIGN_PREFIXES = (
    "offset.storage",
    "config.storage",
    "status.storage",
    "key.converter",
    "value.converter",
    "header.converter",
    "task.",
    "worker.",
    "config.providers",
    "config.action.reload",
    "offset.flush.",
    "listeners",
    "rest.",
    "admin.listeners",
    "dedicated.mode.",
    "metrics.",
    "metric.reporters",
    "errors.",
    "transforms",
    "predicates",
    "topic.creation.",
    "topic.tracking.",
    "exactly.once.source.",
    "transaction.boundary",
    "offsets.storage.topic",
    "scheduled.rebalance.",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "rebalance.timeout.ms",
    "group.id",
    "client.id",
    "connector.client.config.override.policy",
    "plugin.",
    "access.control.",
    "inter.worker.",
    "response.http.headers.",
    "cloudera.",
    "streams.replication.manager.",
    "srm.",
    "source.cluster.",
    "target.cluster.",
    "name",
    "connector.class",
)
"""Connect worker/connector and SRM key families: passed through, never "did you mean"-ed."""


def is_connection_key(key: str) -> bool:
    """Cluster connection/security keys: bootstrap, security protocol, ``ssl.*``, ``sasl.*``."""
    return key in CONNECTION_KEYS or key.startswith(("ssl.", "sasl."))


def is_foreign_key(key: str) -> bool:
    """A Connect/worker/SRM key we pass through without checking spelling."""
    return any(key == p or key.startswith(p) for p in FOREIGN_PREFIXES)


def client_prefix(key: str) -> str | None:
    """The flow-level client prefix of ``key`` without its dot, e.g. ``source.consumer``."""
    for prefix in FLOW_CLIENT_PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix):
            return prefix[:-1]
    return None


def suggest_key(
    key: str,
    candidates: Iterable[str],
    prefixes: Iterable[str] = (),
    *,
    cutoff: float = SUGGESTION_CUTOFF,
) -> str | None:
    """The known key ``key`` is most likely a typo of, or ``None``.

    Whole keys are compared first (``topcs`` -> ``topics``); then a misspelt leading
    segment is matched against ``prefixes`` (``consmer.fetch.max.bytes`` ->
    ``consumer.fetch.max.bytes``).
    """
    close = difflib.get_close_matches(key, list(candidates), n=1, cutoff=cutoff)
    if close:
        return close[0]
    head, dot, rest = key.partition(".")
    words = list(prefixes)
    if not dot or head in words:
        return None
    heads = difflib.get_close_matches(head, words, n=1, cutoff=cutoff)
    return f"{heads[0]}.{rest}" if heads else None
