"""HTTPS for the services' listeners and their HTTP clients, configured in SRM's keys.

``listeners = https://...`` turns TLS on; the certificate and the CA come from
``listeners.https.ssl.keystore.*`` / ``ssl.truststore.*`` as in SRM (PEM, PKCS12, or JKS
converted with ``keytool``, read by :mod:`srm_common.adapters.key_stores` as for Kafka
clients), ``listeners.https.ssl.client.auth`` = ``none`` (default),
``requested`` or ``required`` asks callers for a certificate signed by the truststore,
whose subject CN becomes their principal. Keys, passwords and stores are never logged;
a store converted for Python's ``ssl`` is written only encrypted under a random
password, in the process's private folder (0700) removed at exit.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srm_common.adapters.key_stores import key_files, trust_file
from srm_common.config.tls_stores import KeyStore, TrustStore
from srm_common.errors import ConfigError

PREFIX = "listeners.https."
KEYS = (
    "listeners",
    *(
        PREFIX + k
        for k in (
            "ssl.keystore.location",
            "ssl.keystore.password",
            "ssl.keystore.type",
            "ssl.key.password",
            "ssl.truststore.location",
            "ssl.truststore.password",
            "ssl.truststore.type",
            "ssl.client.auth",
        )
    ),
)
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


@dataclass(frozen=True)
class Store:
    location: Path
    type: str  # PEM, PKCS12, JKS
    password: str | None = None


@dataclass(frozen=True)
class ListenerTls:
    """The HTTPS listener of a service: its certificate and what it asks of callers."""

    keystore: Store
    key_password: str | None = None
    truststore: Store | None = None
    client_auth: str = "none"

    @property
    def asks_for_certificates(self) -> bool:
        return self.client_auth != "none"


def listener_tls(extra: Mapping[str, str]) -> ListenerTls | None:
    """The HTTPS listener the configuration asks for; None for plain HTTP (no
    ``listeners`` or an ``http://`` one). :class:`ConfigError` naming the key if bad."""
    listeners = extra.get("listeners", "").strip()
    schemes = {item.strip().split("://", 1)[0].lower() for item in listeners.split(",") if item}
    if not listeners or schemes == {"http"}:
        return None
    if schemes != {"https"}:
        raise ConfigError(
            f"listeners = {listeners[:100]!r}: write https://HOST:PORT or http://HOST:PORT"
            " (one scheme for the service's one listener)",
            key="listeners",
        )
    keystore = _store(extra, "keystore")
    if keystore is None:
        raise ConfigError(
            "an https listener needs its certificate: set listeners.https.ssl.keystore.location",
            key=PREFIX + "ssl.keystore.location",
        )
    auth = extra.get(PREFIX + "ssl.client.auth", "none").strip().lower()
    if auth not in CLIENT_AUTH:
        raise ConfigError(
            f"{auth[:40]!r} is not a client auth mode; use none, requested or required",
            key=PREFIX + "ssl.client.auth",
        )
    truststore = _store(extra, "truststore")
    if auth != "none" and truststore is None:
        raise ConfigError(
            f"ssl.client.auth = {auth} needs the CA that signs client certificates: set"
            " listeners.https.ssl.truststore.location",
            key=PREFIX + "ssl.truststore.location",
        )
    return ListenerTls(keystore, extra.get(PREFIX + "ssl.key.password"), truststore, auth)


def _store(extra: Mapping[str, str], kind: str) -> Store | None:
    location = extra.get(f"{PREFIX}ssl.{kind}.location", "").strip()
    if not location:
        return None
    path = Path(location)
    given = extra.get(f"{PREFIX}ssl.{kind}.type", "").strip().upper()
    guessed = {".p12": "PKCS12", ".pfx": "PKCS12", ".jks": "JKS"}.get(path.suffix.lower(), "PEM")
    kind_type = given or guessed
    if kind_type not in ("PEM", "PKCS12", "JKS"):
        raise ConfigError(
            f"{given!r} is not a store type; use PEM, PKCS12 or JKS",
            key=f"{PREFIX}ssl.{kind}.type",
        )
    if not path.is_file():
        raise ConfigError(f"no {kind} at {path}", key=f"{PREFIX}ssl.{kind}.location")
    return Store(path, kind_type, extra.get(f"{PREFIX}ssl.{kind}.password"))


def server_context(tls: ListenerTls) -> ssl.SSLContext:
    """The listener's TLS context; :class:`ConfigError` naming the store that fails."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_chain(context, tls.keystore, tls.key_password, "keystore")
    if tls.truststore is not None:
        _load_trust(context, tls.truststore)
    context.verify_mode = CLIENT_AUTH[tls.client_auth]
    return context


def client_context(
    ca_file: Path | None = None,
    cert_file: Path | None = None,
    truststore: Store | None = None,
) -> ssl.SSLContext:
    """A client's context: verifies servers with ``ca_file`` (or ``truststore``, else the
    system's CAs) and presents ``cert_file`` (PEM: certificate and key) when given."""
    context = ssl.create_default_context()
    if ca_file is not None:
        _load_trust(context, Store(ca_file, "PEM"))
    elif truststore is not None:
        _load_trust(context, truststore)
    if cert_file is not None:
        _load_chain(context, Store(cert_file, "PEM"), None, "client certificate")
    return context


def listener_certificate(tls: ListenerTls) -> str:
    """The certificate the listener presents (PEM, the first of its chain): what a client
    that must trust exactly this listener pins (:func:`pinned_client_context`)."""
    files = key_files(_as_kafka_store(tls.keystore, tls.key_password, "keystore"))
    chain = Path(files.certificate).read_text()
    end = "-----END CERTIFICATE-----"
    return chain[: chain.index(end) + len(end)] + "\n"


def pinned_client_context(certificate: str) -> ssl.SSLContext:
    """A client's context that trusts one server certificate (PEM) and nothing else: the
    copy slots' to their driver, which hands them its listener's certificate with the job.
    The certificate itself is the trust anchor (a partial chain: neither its CA nor the
    system's CAs are needed), and the host name is not checked, because the slots reach
    the driver at the address it advertises, often an IP its certificate does not name;
    a server without this certificate's private key cannot pass."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = False
    context.verify_mode = ssl.CERT_REQUIRED
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    context.load_verify_locations(cadata=certificate)
    return context


def _as_kafka_store(store: Store, key_password: str | None, what: str) -> KeyStore:
    if store.type != "PEM" and not store.password:
        raise ConfigError(
            f"a {store.type} {what} needs its password: set listeners.https.ssl.keystore.password",
            key=PREFIX + "ssl.keystore.password",
        )
    return KeyStore(
        store.type,
        location=str(store.location),
        password=store.password,
        key_password=key_password or (store.password if store.type == "PEM" else None),
    )


def _load_chain(context: ssl.SSLContext, store: Store, key_password: str | None, what: str) -> None:
    """The certificate and key, through the same store reading as Kafka clients use."""
    key = PREFIX + "ssl.keystore.location"
    as_kafka_store = _as_kafka_store(store, key_password, what)
    try:
        files = key_files(as_kafka_store)
        context.load_cert_chain(files.certificate, files.key, password=files.key_password)
    except ConfigError as exc:
        raise ConfigError(
            f"cannot use the {what} {store.location} ({store.type}): {exc.message}", key=key
        ) from None
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot use the {what} {store.location} ({store.type}): {_reason(exc)}"
            " (a wrong password, or not a certificate with its private key?)",
            key=key,
        ) from None


def _load_trust(context: ssl.SSLContext, store: Store) -> None:
    key = PREFIX + "ssl.truststore.location"
    as_kafka_store = TrustStore(store.type, location=str(store.location), password=store.password)
    try:
        context.load_verify_locations(cafile=trust_file(as_kafka_store))
    except ConfigError as exc:
        raise ConfigError(
            f"cannot use the truststore {store.location} ({store.type}): {exc.message}", key=key
        ) from None
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot use the truststore {store.location} ({store.type}): {_reason(exc)}", key=key
        ) from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def certificate_name(ssl_object: Any) -> str | None:
    """The principal of a verified client certificate: its subject's CN, else its first
    DNS name; None when the caller sent none (or it was not verified)."""
    if ssl_object is None:
        return None
    try:
        peer = ssl_object.getpeercert()
    except ValueError:
        return None
    if not peer:
        return None
    for rdn in peer.get("subject", ()):
        for name, value in rdn:
            if name == "commonName":
                return str(value)
    for kind, value in peer.get("subjectAltName", ()):
        if kind == "DNS":
            return str(value)
    return None


def peer_certificate_protocol() -> type:
    """uvicorn's h11 protocol, which also puts the client certificate's principal in
    each request's scope (``extensions.tls.client_cert_name``) for the access check."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class PeerCertificateH11(H11Protocol):
        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            name = certificate_name(transport.get_extra_info("ssl_object"))
            app = self.app

            async def with_certificate(scope: Any, receive: Any, send: Any) -> None:
                extensions = scope.setdefault("extensions", {})
                extensions["tls"] = {"client_cert_name": name}
                await app(scope, receive, send)

            self.app = with_certificate

    return PeerCertificateH11
