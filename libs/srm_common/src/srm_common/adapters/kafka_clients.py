"""Every Python Kafka client is built here, from the Java (MM2) keys of the configuration.

The configuration speaks the Java clients' language (the copier gets it unchanged);
librdkafka, aiokafka and Faust get the same security settings translated::

    Java key                                   librdkafka
    security.protocol                          security.protocol
    sasl.mechanism                             sasl.mechanisms
    sasl.jaas.config  (username=, password=)   sasl.username, sasl.password
    sasl.jaas.config  (Krb5LoginModule         sasl.kerberos.principal, .keytab, and the
        keyTab=, principal=) and                   process's login (adapters.kerberos);
        sasl.kerberos.service.name                 sasl.kerberos.service.name
    ssl.truststore.* (JKS, PKCS12, PEM)        ssl.ca.location (a PEM file)
    ssl.keystore.*, ssl.key.password           ssl.certificate.location, ssl.key.location,
                                               ssl.key.password (key re-encrypted)
    ssl.endpoint.identification.algorithm      ssl.endpoint.identification.algorithm
        https | ""                                 https | none
    other ssl.* / sasl.* (ssl.protocol,        dropped (see security.JAVA_ONLY_KEYS)
        ssl.enabled.protocols, *.algorithm)

The copy slots' clients are configured from the Java clients' tuning keys as well
(:func:`java_tuning`): librdkafka's name or unit where it differs (``max.request.size``
-> ``message.max.bytes``, ``buffer.memory`` bytes -> ``queue.buffering.max.kbytes``,
``fetch.max.wait.ms`` -> ``fetch.wait.max.ms``, ``auto.offset.reset=none`` -> ``error``,
``receive.buffer.bytes`` / ``send.buffer.bytes`` -> ``socket.*``, with -1, the kernel's
autotuned size, as librdkafka's 0),
nothing where librdkafka has no such setting (``max.block.ms``, ``max.poll.records``,
serializers, Java class hooks); keys of the same name and meaning pass unchanged
(``batch.size``, ``linger.ms``, ``acks``, ``enable.idempotence``, ``fetch.max.bytes``,
``max.partition.fetch.bytes``, ``isolation.level``...).

What :func:`srm_common.config.security.read_security` refuses never gets here (the
configuration did not load). Use :func:`admin`, :func:`producer` and :func:`consumer`
instead of confluent-kafka's constructors, :func:`aiokafka_security` for aiokafka and
:func:`ssl_context` for Faust. A store that cannot be read is a
:class:`~srm_common.errors.ConfigError`; a client librdkafka refuses keeps
confluent-kafka's ``KafkaException``, with remembered secrets masked in its text.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from srm_common.adapters import kerberos
from srm_common.adapters.key_stores import KeyFiles, key_files, trust_file
from srm_common.config.security import Security, read_security
from srm_common.errors import ConfigError
from srm_common.redaction import redact_text

_SECURITY_PREFIXES = ("ssl.", "sasl.")


def librdkafka_config(keys: Mapping[str, Any]) -> dict[str, Any]:
    """``keys`` (Java keys, any other client keys) as a librdkafka config."""
    text_keys = {k: v for k, v in keys.items() if isinstance(v, str)}
    try:
        security = read_security(text_keys)
    except ValueError as exc:  # only when a caller skipped load_config's check
        key = getattr(exc, "key", None)
        raise ConfigError(str(exc), key=key) from None
    config = {
        k: v
        for k, v in keys.items()
        if k != "security.protocol" and not k.startswith(_SECURITY_PREFIXES)
    }
    if security.kerberos is not None:
        kerberos.log_in(security.kerberos)
    ca = trust_file(security.truststore) if security.truststore else None
    own = key_files(security.keystore) if security.keystore else None
    config.update(librdkafka_security(security, ca=ca, own=own))
    return config


_JAVA_RENAMED = {
    "max.request.size": "message.max.bytes",
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
}
# -1 in Java: leave the socket buffer to the kernel, which autotunes it (net.ipv4.tcp_rmem,
# tcp_wmem); librdkafka's value for that is 0 (its default) and it refuses -1.
_SOCKET_BUFFERS = frozenset({"send.buffer.bytes", "receive.buffer.bytes"})
_JAVA_ONLY_TUNING = frozenset(
    {
        "max.block.ms",  # librdkafka's produce() never blocks (BufferError instead)
        "max.poll.records",  # a consume() argument, not a setting
        "key.serializer",
        "value.serializer",
        "key.deserializer",
        "value.deserializer",
        "partitioner.class",
        "partitioner.ignore.keys",
        "partitioner.adaptive.partitioning.enable",
        "partitioner.availability.timeout.ms",
        "interceptor.classes",
        "metric.reporters",
        "metrics.num.samples",
        "metrics.sample.window.ms",
        "metrics.recording.level",
        "auto.include.jmx.reporter",
        "default.api.timeout.ms",
        "exclude.internal.topics",
        "metadata.max.idle.ms",
        "socket.connection.setup.timeout.max.ms",
        "security.providers",
    }
)


def java_tuning(keys: Mapping[str, Any]) -> dict[str, Any]:
    """``keys`` (a Java client config) with its tuning keys in librdkafka's names and
    units (see the module docstring); security keys are left to :func:`librdkafka_config`."""
    out: dict[str, Any] = {}
    for key, value in keys.items():
        if key in _JAVA_ONLY_TUNING:
            continue
        if key == "buffer.memory":
            out["queue.buffering.max.kbytes"] = str(max(1, int(str(value).strip()) // 1024))
        elif key == "auto.offset.reset" and str(value).strip() == "none":
            out[key] = "error"
        elif key in _SOCKET_BUFFERS and str(value).strip() == "-1":
            out[_JAVA_RENAMED[key]] = "0"  # the OS's size, autotuned (librdkafka says 0)
        else:
            out[_JAVA_RENAMED.get(key, key)] = value
    return out


def librdkafka_security(
    security: Security, *, ca: str | None = None, own: KeyFiles | None = None
) -> dict[str, str]:
    """librdkafka's keys for ``security`` with its stores already written (``ca``, ``own``)."""
    out = {"security.protocol": security.protocol}
    if security.kerberos is not None:
        out["sasl.mechanisms"] = "GSSAPI"
        out.update(kerberos.librdkafka_keys(security.kerberos))
    elif security.uses_sasl:
        assert security.mechanism and security.username and security.password is not None
        out["sasl.mechanisms"] = security.mechanism
        out["sasl.username"] = security.username
        out["sasl.password"] = security.password
    if security.uses_tls:
        out["ssl.endpoint.identification.algorithm"] = (
            "https" if security.verify_hostname else "none"
        )
        if ca is not None:
            out["ssl.ca.location"] = ca
        if own is not None:
            out["ssl.certificate.location"] = own.certificate
            out["ssl.key.location"] = own.key
            out["ssl.key.password"] = own.key_password
    return out


def admin(keys: Mapping[str, Any], **extra: Any) -> AdminClient:
    """An AdminClient for ``keys`` (then ``extra``, librdkafka's own names) with two
    settings fixed, whatever the caller asks:

    * it never has a topic created by asking about it: librdkafka's admin (a producer
      handle) allows that by default, so a metadata request by name for a topic that
      does not exist made a broker with ``auto.create.topics.enable=true`` (Kafka's
      default) create it with the broker's defaults (measured on Kafka 4.1.1); Java's
      AdminClient never does;
    * it keeps its broker connections (``enable.sparse.connections=false``): with
      librdkafka's sparse connections (2.15.1) a request that waits for a broker that
      refuses connections (the controller for DescribeTopics, DescribeConfigs and
      CreateTopics, a leader for ListOffsets) asks for a new connection on every state
      change of that broker, skipping the reconnect backoff, so one pending request held
      a full core until its timeout (7.5 s of CPU in 7.5 s, against 0.01 s with
      persistent connections, whose reconnects back off: measured with one broker
      killed under one client). A site that is down must cost the others nothing."""
    return _built(AdminClient, {**librdkafka_config(keys), **extra, **_ADMIN_FIXED})


_ADMIN_FIXED = {"allow.auto.create.topics": "false", "enable.sparse.connections": "false"}


def producer(keys: Mapping[str, Any], **extra: Any) -> Producer:
    """A Producer for ``keys`` (then ``extra``: librdkafka's own names; dotted names go
    in the ``keys`` mapping or as ``**{"message.timeout.ms": 10_000}``)."""
    return _built(Producer, {**librdkafka_config(keys), **extra})


def consumer(keys: Mapping[str, Any], **extra: Any) -> Consumer:
    """A Consumer for ``keys`` (then ``extra``)."""
    return _built(Consumer, {**librdkafka_config(keys), **extra})


def _built(kind: Any, config: dict[str, Any]) -> Any:
    try:
        return kind(config)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        text = error.str() if isinstance(error, KafkaError) else str(exc)
        masked = redact_text(text, _secret_values(config))
        if masked == text:
            raise
        code = error.code() if isinstance(error, KafkaError) else KafkaError._INVALID_ARG
        raise KafkaException(KafkaError(code, masked)) from None


def _secret_values(config: Mapping[str, Any]) -> list[str]:
    names = ("sasl.password", "ssl.key.password", "ssl.keystore.password")
    return [str(config[n]) for n in names if config.get(n)]


def ssl_context(keys: Mapping[str, str]) -> ssl.SSLContext | None:
    """The TLS context of ``keys`` for aiokafka and Faust, or None without TLS."""
    security = read_security(keys)
    if not security.uses_tls:
        return None
    ca = trust_file(security.truststore) if security.truststore else None
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = security.verify_hostname
    if security.keystore:
        own = key_files(security.keystore)
        context.load_cert_chain(own.certificate, own.key, own.key_password)
    return context


def aiokafka_security(keys: Mapping[str, str]) -> dict[str, Any]:
    """Keyword arguments for an aiokafka client: protocol, SASL login, TLS context."""
    security = read_security(keys)
    out: dict[str, Any] = {"security_protocol": security.protocol}
    if security.kerberos is not None:
        kerberos.log_in(security.kerberos)
        out.update(
            sasl_mechanism="GSSAPI", sasl_kerberos_service_name=security.kerberos.service_name
        )
    elif security.uses_sasl:
        out.update(
            sasl_mechanism=security.mechanism,
            sasl_plain_username=security.username,
            sasl_plain_password=security.password,
        )
    if security.uses_tls:
        out["ssl_context"] = ssl_context(keys)
    return out
