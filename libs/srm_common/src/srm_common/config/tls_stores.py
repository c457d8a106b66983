"""A client's TLS stores, read from the Java keys (``ssl.truststore.*``,
``ssl.keystore.*``, ``ssl.key.password``): JKS or PKCS12 files, or PEM as a file or as
text. :mod:`srm_common.config.security` reads them as part of a cluster's
:class:`~srm_common.config.security.Security`; :mod:`srm_common.adapters.key_stores`
turns them into what librdkafka and Python's ssl take."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from srm_common.config.security_problem import SecurityProblem

STORE_TYPES = ("JKS", "PKCS12", "PEM")


@dataclass(frozen=True)
class TrustStore:
    """What the client trusts: a store file, or PEM text (``certificates``)."""

    type: str
    location: str | None = None
    password: str | None = None
    certificates: str | None = None


@dataclass(frozen=True)
class KeyStore:
    """The client's own key and certificate chain (mutual TLS). For PEM either
    ``location`` (a file with both) or ``key`` plus ``chain`` (PEM text)."""

    type: str
    location: str | None = None
    password: str | None = None
    key_password: str | None = None
    key: str | None = None
    chain: str | None = None


def _store_type(keys: Mapping[str, str], key: str) -> str:
    kind = keys.get(key, "JKS").strip().upper() or "JKS"
    if kind not in STORE_TYPES:
        raise SecurityProblem(key, f"expected {', '.join(STORE_TYPES)}")
    return kind


def _text(keys: Mapping[str, str], key: str) -> str | None:
    value = keys.get(key)
    return value if value is not None and value.strip() else None


def read_truststore(keys: Mapping[str, str]) -> TrustStore | None:
    """The trust store the ``ssl.truststore.*`` keys name, or None: the system's CAs."""
    kind = _store_type(keys, "ssl.truststore.type")
    location = _text(keys, "ssl.truststore.location")
    password = _text(keys, "ssl.truststore.password")
    certificates = _text(keys, "ssl.truststore.certificates")
    if certificates is not None and kind != "PEM":
        raise SecurityProblem(
            "ssl.truststore.certificates", "PEM certificates need ssl.truststore.type=PEM"
        )
    if kind == "PEM":
        if location and certificates:
            raise SecurityProblem(
                "ssl.truststore.certificates",
                "give either ssl.truststore.location or ssl.truststore.certificates, not both",
            )
        if password:
            raise SecurityProblem(
                "ssl.truststore.password",
                "a PEM trust store has no password (Kafka refuses one); remove it",
            )
    if location is None and certificates is None:
        return None  # the system's CAs, on both stacks
    return TrustStore(kind, location=location, password=password, certificates=certificates)


def read_keystore(keys: Mapping[str, str]) -> KeyStore | None:
    """The client's own key (mutual TLS) the ``ssl.keystore.*`` keys name, or None."""
    kind = _store_type(keys, "ssl.keystore.type")
    location = _text(keys, "ssl.keystore.location")
    password = _text(keys, "ssl.keystore.password")
    key_password = _text(keys, "ssl.key.password")
    key = _text(keys, "ssl.keystore.key")
    chain = _text(keys, "ssl.keystore.certificate.chain")
    if (key or chain) and kind != "PEM":
        name = "ssl.keystore.key" if key else "ssl.keystore.certificate.chain"
        raise SecurityProblem(name, "PEM keys and certificates need ssl.keystore.type=PEM")
    if kind == "PEM":
        if location and (key or chain):
            raise SecurityProblem(
                "ssl.keystore.location",
                "give either ssl.keystore.location or ssl.keystore.key with"
                " ssl.keystore.certificate.chain, not both",
            )
        if bool(key) != bool(chain):
            missing = "ssl.keystore.certificate.chain" if key else "ssl.keystore.key"
            raise SecurityProblem(missing, "mutual TLS with PEM needs both the key and the chain")
        if password:
            raise SecurityProblem(
                "ssl.keystore.password",
                "a PEM key store has no store password (Kafka refuses one); the key's"
                " password is ssl.key.password",
            )
        if location is None and key is None:
            return None
        return KeyStore(kind, location=location, key_password=key_password, key=key, chain=chain)
    if location is None:
        return None
    if password is None:
        raise SecurityProblem(
            "ssl.keystore.password",
            f"the {kind} key store at ssl.keystore.location needs its password",
        )
    return KeyStore(kind, location=location, password=password, key_password=key_password)
