"""HTTPS for the services' listeners and their HTTP clients, configured in SRM's keys.

``listeners = https://...`` turns TLS on; the certificate and the CA come from
``listeners.https.ssl.keystore.*`` / ``ssl.truststore.*`` as in SRM (PEM, PKCS12, or JKS
converted with ``keytool``), ``listeners.https.ssl.client.auth`` = ``none`` (default),
``requested`` or ``required`` asks callers for a certificate signed by the truststore,
whose subject CN becomes their principal. Keys, passwords and stores are never logged;
a store converted for Python's ``ssl`` is written only encrypted under a random
password, in a private temporary folder removed at once.
"""

from __future__ import annotations

import os
import secrets
import shutil
import ssl
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _load_chain(context: ssl.SSLContext, store: Store, key_password: str | None, what: str) -> None:
    try:
        if store.type == "PEM":
            context.load_cert_chain(store.location, password=key_password or store.password)
            return
        key, chain = _pkcs12(store, what)
        with tempfile.TemporaryDirectory(prefix="srm-tls-") as folder:
            wrap = secrets.token_urlsafe(24)
            path = Path(folder) / "chain.pem"
            _write_private(path, _key_pem(key, wrap) + b"".join(_cert_pem(c) for c in chain))
            context.load_cert_chain(path, password=wrap)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot use the {what} {store.location} ({store.type}): {_reason(exc)}"
            " (a wrong password, or not a certificate with its private key?)",
            key=PREFIX + "ssl.keystore.location",
        ) from None


def _load_trust(context: ssl.SSLContext, store: Store) -> None:
    try:
        if store.type == "PEM":
            context.load_verify_locations(cafile=str(store.location))
            return
        key, chain = _pkcs12(store, "truststore")
        del key
        context.load_verify_locations(cadata="".join(_cert_pem(c).decode() for c in chain))
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot use the truststore {store.location} ({store.type}): {_reason(exc)}",
            key=PREFIX + "ssl.truststore.location",
        ) from None


def _pkcs12(store: Store, what: str) -> tuple[Any, list[Any]]:
    """The key (or None) and the certificates of a PKCS12 store (a JKS one converted)."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    if store.type == "JKS":
        data = _jks_as_pkcs12(store, what)
    else:
        data = store.location.read_bytes()
    password = store.password.encode() if store.password else None
    loaded = pkcs12.load_pkcs12(data, password)
    chain = [loaded.cert.certificate] if loaded.cert is not None else []
    chain += [c.certificate for c in loaded.additional_certs]
    if not chain:
        raise ValueError("it holds no certificate")
    return loaded.key, chain


def _jks_as_pkcs12(store: Store, what: str) -> bytes:
    keytool = shutil.which("keytool")
    if keytool is None:
        raise ValueError(f"a JKS {what} needs keytool (a JDK); or convert it to PKCS12")
    with tempfile.TemporaryDirectory(prefix="srm-tls-") as folder:
        target = Path(folder) / "store.p12"
        env = {**os.environ, "SRM_STORE_PASS": store.password or ""}
        done = subprocess.run(
            [
                keytool,
                "-importkeystore",
                "-noprompt",
                "-srckeystore",
                str(store.location),
                "-srcstoretype",
                "JKS",
                "-srcstorepass:env",
                "SRM_STORE_PASS",
                "-destkeystore",
                str(target),
                "-deststoretype",
                "PKCS12",
                "-deststorepass:env",
                "SRM_STORE_PASS",
            ],  # fmt: skip
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=60,
        )
        if done.returncode != 0:
            first = (done.stdout + done.stderr).strip().splitlines()
            raise ValueError(first[0] if first else "keytool could not read it")
        return target.read_bytes()


def _key_pem(key: Any, password: str) -> bytes:
    from cryptography.hazmat.primitives import serialization

    if key is None:
        raise ValueError("it holds no private key")
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(password.encode()),
    )


def _cert_pem(certificate: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return certificate.public_bytes(serialization.Encoding.PEM)


def _write_private(path: Path, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)


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
