"""A start-up check that each cluster accepts our credentials and certificates.

librdkafka reports a wrong password or an untrusted broker certificate only as a
"Broker transport failure" from the call that needed the broker, plus raw log lines on
stderr, so a service would start, retry for ever and never say why. Commands and
services call :func:`refused_clusters` before they build anything: a cluster whose
brokers refuse the login (``_AUTHENTICATION``) or whose TLS handshake fails (``_SSL``) is
one line naming the alias, what failed and which keys to check. A cluster that does not
answer at all is not refused here (it may be down for a while; the services keep
running their other flows, DESIGN.md "Faults on the control path").

The probe's own client logs nothing: librdkafka's lines go to a silent logger and its
errors to a callback, read once the probe ends. Each probe takes at most ``timeout_s``;
the clusters are probed in parallel.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException

from srm_common.adapters import kafka_clients
from srm_common.config.model import SrmConfig
from srm_common.config.security import read_security
from srm_common.errors import SrmError
from srm_common.redaction import redact_text

PROBE_TIMEOUT_S = 10.0
# After every broker went down, how long to wait for a later error that explains it: the
# first failed handshake sometimes surfaces as a bare transport error, the next as _SSL.
DOWN_GRACE_S = 1.0
_SILENT = logging.getLogger("srm.kafka.probe")
_SILENT.setLevel(logging.CRITICAL + 1)  # librdkafka's lines are read from error_cb instead
_SILENT.propagate = False
_OPENSSL = re.compile(r"SSL routines|SSL handshake failed")
_NOISE = (
    re.compile(r"^\S+://\S+/(?:bootstrap|\d+): "),  # "sasl_ssl://host:port/bootstrap: "
    re.compile(r"\s*\(after \d+ms in state \w+\)$"),
    re.compile(r",? ?verify that ssl\.ca\.location is correctly configured.*$"),
)


def refused_clusters(
    config: SrmConfig, aliases: Iterable[str] | None = None, *, timeout_s: float = PROBE_TIMEOUT_S
) -> list[str]:
    """One line per cluster of ``aliases`` (all by default) that refuses our login or
    certificate, in alias order; empty when none does."""
    chosen = list(config.aliases if aliases is None else aliases)
    found: dict[str, str | None] = {}

    def probe(alias: str) -> None:
        found[alias] = refusal(alias, config.cluster(alias).client_config("admin"), timeout_s)

    threads = [threading.Thread(target=probe, args=(a,), daemon=True) for a in chosen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s + 5)
    return [line for alias in chosen if (line := found.get(alias))]


def refusal(alias: str, keys: Mapping[str, str], timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why cluster ``alias`` refuses the client ``keys``, or None (it let us in, or did
    not answer within ``timeout_s``)."""
    errors: list[KafkaError] = []
    try:
        admin = kafka_clients.admin(
            keys, logger=_SILENT, error_cb=errors.append, **{"socket.timeout.ms": 5000}
        )
    except SrmError as exc:
        return f"cluster {alias!r}: {exc}"
    deadline = time.monotonic() + timeout_s
    down_since: float | None = None
    try:
        while time.monotonic() < deadline:
            try:
                # Short slices: a refused connection shows up as _ALL_BROKERS_DOWN at once.
                admin.list_topics(timeout=min(0.25, max(0.05, deadline - time.monotonic())))
                return None
            except KafkaException:
                admin.poll(0)
            if _security_error(errors) is not None:
                break
            if down_since is None and any(e.code() == KafkaError._ALL_BROKERS_DOWN for e in errors):
                down_since = time.monotonic()
            if down_since is not None and time.monotonic() - down_since >= DOWN_GRACE_S:
                return None  # refused connections or a timeout: down, not refusing us
    finally:
        admin.poll(0)
    error = _security_error(errors)
    if error is None:
        return None
    return _explain(alias, keys, error)


def _security_error(errors: list[KafkaError]) -> KafkaError | None:
    """The first login or TLS failure among ``errors``: one with librdkafka's code for it
    first, else a transport error carrying OpenSSL's reason (how librdkafka sometimes
    reports the very first failed handshake)."""
    wanted = (KafkaError._AUTHENTICATION, KafkaError._SSL)
    coded = next((e for e in errors if e.code() in wanted), None)
    if coded is not None:
        return coded
    return next(
        (e for e in errors if e.code() == KafkaError._TRANSPORT and _OPENSSL.search(e.str())), None
    )


def _explain(alias: str, keys: Mapping[str, str], error: KafkaError) -> str:
    reason = error.str()
    for pattern in _NOISE:
        reason = pattern.sub("", reason)
    reason = redact_text(reason)
    servers = keys.get("bootstrap.servers", "")
    security = read_security(keys)
    if error.code() == KafkaError._AUTHENTICATION and security.kerberos is not None:
        login = security.kerberos
        hint = (
            f"check principal= in {alias}.sasl.jaas.config and"
            f" {alias}.sasl.kerberos.service.name (GSSAPI login as {login.principal!r} to"
            f" the brokers' service {login.service_name!r})"
        )
        return f"cluster {alias!r} ({servers}): authentication failed: {reason}; {hint}"
    if error.code() == KafkaError._AUTHENTICATION:
        hint = (
            f"check the user and password in {alias}.sasl.jaas.config"
            f" ({security.mechanism} login as {security.username!r})"
        )
        return f"cluster {alias!r} ({servers}): authentication failed: {reason}; {hint}"
    if security.keystore is not None:
        own = f", and that {alias}.ssl.keystore.* holds a certificate the broker trusts"
    else:
        own = ""
    hint = (
        f"check that {alias}.ssl.truststore.* holds the CA that signed the broker's"
        f" certificate{own}"
    )
    return f"cluster {alias!r} ({servers}): TLS handshake failed (SSL): {reason}; {hint}"
