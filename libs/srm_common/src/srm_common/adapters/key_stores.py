"""Java key and trust stores turned into the PEM files librdkafka and Python's ssl read.

A trust store (JKS, PKCS#12 or PEM) becomes one CA file; a key store (JKS, PKCS#12, PEM
file or PEM text) becomes a certificate chain file and a private key file, the key
encrypted with a random password that lives only in this process's memory. JKS is read
with the JDK's ``keytool`` (passwords handed over in its environment, never on its
command line); PKCS#12 and PEM with ``cryptography``.

Files go into one private directory per process (mode 0700, files 0600), created on
first use and removed at exit; after a ``kill -9`` the directory stays behind, holding
certificates (public) and keys encrypted with a password that died with the process.
Each store is converted once per process. A store that cannot be read raises
:class:`~srm_common.errors.ConfigError` naming the key and the reason, never a password.
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from srm_common.config.tls_stores import KeyStore, TrustStore
from srm_common.errors import ConfigError

_PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----\s.*?-----END CERTIFICATE-----", re.DOTALL)
_PEM_KEY = re.compile(
    rb"-----BEGIN (?:ENCRYPTED |RSA |EC )?PRIVATE KEY-----\s.*?"
    rb"-----END (?:ENCRYPTED |RSA |EC )?PRIVATE KEY-----",
    re.DOTALL,
)
KEYTOOL_TIMEOUT_S = 60.0

_lock = threading.Lock()
_directory: Path | None = None
_trust_files: dict[TrustStore, str] = {}
_key_files: dict[KeyStore, KeyFiles] = {}


@dataclass(frozen=True)
class KeyFiles:
    """The client's certificate chain and (encrypted) key as PEM files."""

    certificate: str
    key: str
    key_password: str


def trust_file(store: TrustStore) -> str:
    """A PEM file of the certificates ``store`` trusts (the file itself for a PEM file)."""
    if store.type == "PEM" and store.location:
        # Checked here so that a wrong file is one line naming the key, not librdkafka's
        # "ssl.ca.location failed" when a client is built; librdkafka reads the file itself.
        if not _pem_certificates(_read_bytes(store.location, "ssl.truststore.location"), ""):
            raise ConfigError(
                f"{store.location} holds no PEM certificate", key="ssl.truststore.location"
            )
        return store.location
    with _lock:
        if store not in _trust_files:
            certificates = _trusted_certificates(store)
            if not certificates:
                raise ConfigError("the trust store holds no certificate", key=_trust_key(store))
            pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certificates)
            _trust_files[store] = _write("ca.pem", pem)
        return _trust_files[store]


def key_files(store: KeyStore) -> KeyFiles:
    """The chain and key of ``store`` as files; the key re-encrypted with a new password."""
    with _lock:
        if store not in _key_files:
            key, chain = _key_and_chain(store)
            password = secrets.token_urlsafe(24)
            key_pem = key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(password.encode()),
            )
            chain_pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
            _key_files[store] = KeyFiles(
                certificate=_write("chain.pem", chain_pem),
                key=_write("key.pem", key_pem),
                key_password=password,
            )
        return _key_files[store]


def _trust_key(store: TrustStore) -> str:
    return "ssl.truststore.certificates" if store.certificates else "ssl.truststore.location"


def _trusted_certificates(store: TrustStore) -> list[x509.Certificate]:
    key = _trust_key(store)
    if store.certificates is not None:
        return _pem_certificates(store.certificates.encode(), key)
    assert store.location is not None
    if store.type == "JKS":
        listing = _keytool(
            ["-list", "-rfc", "-keystore", store.location, "-storetype", "JKS"],
            {"-storepass": store.password},
            key,
        )
        return _pem_certificates(listing, key)
    data = _read_bytes(store.location, key)
    try:
        _, certificate, others = pkcs12.load_key_and_certificates(
            data, store.password.encode() if store.password else None
        )
    except ValueError:
        raise ConfigError(
            f"cannot read the PKCS12 trust store {store.location}: wrong"
            " ssl.truststore.password or not a PKCS12 file",
            key=key,
        ) from None
    return ([certificate] if certificate else []) + list(others)


def _key_and_chain(
    store: KeyStore,
) -> tuple[pkcs12.PKCS12PrivateKeyTypes, list[x509.Certificate]]:
    key_name = "ssl.keystore.location"
    if store.type == "PEM":
        if store.key is not None:
            key_name = "ssl.keystore.key"
            key_pem, chain_pem = store.key.encode(), (store.chain or "").encode()
        else:
            assert store.location is not None
            data = _read_bytes(store.location, key_name)
            key_pem, chain_pem = data, data
        found = _PEM_KEY.search(key_pem)
        if found is None:
            raise ConfigError("no PEM private key found", key=key_name)
        try:
            password = store.key_password.encode() if store.key_password else None
            key = serialization.load_pem_private_key(found.group(0), password)
        except (ValueError, TypeError):
            raise ConfigError(
                "cannot read the private key: wrong or missing ssl.key.password, or not a"
                " PKCS#8 PEM key",
                key=key_name,
            ) from None
        chain_key = "ssl.keystore.certificate.chain" if store.key is not None else key_name
        return _checked(key, _pem_certificates(chain_pem, chain_key), key_name)  # type: ignore[arg-type]
    assert store.location is not None and store.password is not None
    if store.type == "JKS":
        return _jks_key_and_chain(store)
    data = _read_bytes(store.location, key_name)
    for password in dict.fromkeys(p for p in (store.password, store.key_password) if p):
        try:
            key, certificate, others = pkcs12.load_key_and_certificates(data, password.encode())
        except ValueError:
            continue
        chain = ([certificate] if certificate else []) + list(others)
        return _checked(key, chain, key_name)
    raise ConfigError(
        f"cannot read the PKCS12 key store {store.location}: wrong ssl.keystore.password"
        " (or ssl.key.password) or not a PKCS12 file",
        key=key_name,
    )


def _jks_key_and_chain(
    store: KeyStore,
) -> tuple[pkcs12.PKCS12PrivateKeyTypes, list[x509.Certificate]]:
    """JKS -> a transient PKCS#12 (keytool -importkeystore) -> key and chain."""
    assert store.location is not None and store.password is not None
    scratch = _private_dir() / f"import-{secrets.token_hex(8)}.p12"
    password = secrets.token_urlsafe(24)
    try:
        _keytool(
            [
                "-importkeystore",
                "-noprompt",
                "-srckeystore",
                store.location,
                "-srcstoretype",
                "JKS",
                "-destkeystore",
                str(scratch),
                "-deststoretype",
                "PKCS12",
            ],  # fmt: skip
            {
                # keytool reads every key with the store password when no alias is
                # named: a JKS whose ssl.key.password differs is refused by keytool.
                "-srcstorepass": store.password,
                "-deststorepass": password,
            },
            "ssl.keystore.location",
        )
        data = scratch.read_bytes()
    finally:
        scratch.unlink(missing_ok=True)
    key, certificate, others = pkcs12.load_key_and_certificates(data, password.encode())
    return _checked(
        key, ([certificate] if certificate else []) + list(others), "ssl.keystore.location"
    )


def _checked(
    key: object, chain: list[x509.Certificate], key_name: str
) -> tuple[pkcs12.PKCS12PrivateKeyTypes, list[x509.Certificate]]:
    if key is None:
        raise ConfigError("the key store holds no private key", key=key_name)
    if not chain:
        raise ConfigError("the key store holds no certificate for its key", key=key_name)
    return key, chain  # type: ignore[return-value]


def _pem_certificates(data: bytes, key: str) -> list[x509.Certificate]:
    blocks = _PEM_CERT.findall(data)
    try:
        return [x509.load_pem_x509_certificate(block) for block in blocks]
    except ValueError:
        raise ConfigError("a PEM certificate cannot be read", key=key) from None


def _read_bytes(location: str, key: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {location}: {exc.strerror or exc}", key=key) from None


def _keytool(args: list[str], passwords: dict[str, str | None], key: str) -> bytes:
    """Run keytool with each password given as ``-opt:env VAR`` (not visible in ps)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SRM_KEYTOOL_")}
    command = ["keytool", *args]
    for index, (option, value) in enumerate(passwords.items()):
        if value is not None:
            name = f"SRM_KEYTOOL_{index}"
            env[name] = value
            command += [f"{option}:env", name]
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, timeout=KEYTOOL_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        raise ConfigError(
            "a JKS store needs the JDK's keytool on the PATH; or convert the store to"
            " PKCS12 (keytool -importkeystore -deststoretype PKCS12)",
            key=key,
        ) from None
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"keytool did not finish within {KEYTOOL_TIMEOUT_S:.0f} s", key=key
        ) from None
    if done.returncode != 0:
        lines = (done.stdout + done.stderr).decode(errors="replace").strip().splitlines()
        reason = next(
            (line for line in lines if "error" in line.lower()), lines[-1] if lines else ""
        )
        reason = reason.removeprefix("keytool error: ").strip()
        raise ConfigError(f"keytool cannot read the JKS store: {reason}", key=key)
    return done.stdout


def _private_dir() -> Path:
    global _directory
    if _directory is None:
        _directory = Path(tempfile.mkdtemp(prefix="srm-tls-"))
        os.chmod(_directory, 0o700)
        atexit.register(shutil.rmtree, _directory, True)
    return _directory


def _write(name: str, data: bytes) -> str:
    path = _private_dir() / f"{secrets.token_hex(6)}-{name}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return str(path)
