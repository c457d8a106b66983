"""Certificates for secured local clusters, made in Python (``cryptography``) and ``keytool``.

One call writes everything a test or a local stack needs into one folder::

    <folder>/
        ca.pem                 the CA's certificate (what clients trust)
        ca.key                 the CA's private key (kept for issuing more, never served)
        broker.pem broker.key  broker certificate, SAN 127.0.0.1 and localhost
        broker.p12             broker keystore (PKCS#12: key + chain), for server.properties
        truststore.jks         CA only, JKS (MM2 style: ssl.truststore.location)
        truststore.p12         CA only, PKCS#12 (ssl.truststore.type=PKCS12)
        client.pem client.key  a client certificate (CN=srm-client) for mutual TLS
        client-encrypted.key   the same key encrypted with the key password (PKCS#8)
        client.p12             client keystore, PKCS#12 (ssl.keystore.location)
        client.jks             client keystore, JKS
        stranger-ca.pem        an unrelated CA: trusting only it must fail the handshake
        stranger.jks           truststore holding only the unrelated CA

Every store and the encrypted key use one password (``TlsFiles.password``). Truststores
are made with ``keytool -importcert`` because Java ignores certificate-only PKCS#12
entries that lack its own "trusted" attribute, which ``cryptography`` does not write.
"""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CLIENT_CN = "srm-client"
VALID_DAYS = 30


@dataclass(frozen=True)
class TlsFiles:
    """Paths of the files in the module docstring, and the one password of the stores."""

    folder: Path
    password: str

    ca_pem = property(lambda self: self.folder / "ca.pem")
    broker_pem = property(lambda self: self.folder / "broker.pem")
    broker_key = property(lambda self: self.folder / "broker.key")
    broker_keystore = property(lambda self: self.folder / "broker.p12")
    truststore_jks = property(lambda self: self.folder / "truststore.jks")
    truststore_p12 = property(lambda self: self.folder / "truststore.p12")
    client_pem = property(lambda self: self.folder / "client.pem")
    client_key = property(lambda self: self.folder / "client.key")
    client_key_encrypted = property(lambda self: self.folder / "client-encrypted.key")
    client_keystore_p12 = property(lambda self: self.folder / "client.p12")
    client_keystore_jks = property(lambda self: self.folder / "client.jks")
    stranger_ca_pem = property(lambda self: self.folder / "stranger-ca.pem")
    stranger_truststore_jks = property(lambda self: self.folder / "stranger.jks")


def write_tls_files(folder: Path, password: str) -> TlsFiles:
    """Create the CA, the broker and client certificates and their stores (idempotent:
    an existing complete folder is reused, so a restarted cluster keeps its certificates)."""
    files = TlsFiles(folder, password)
    if files.stranger_truststore_jks.exists() and files.client_keystore_jks.exists():
        return files
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca("srm-local test CA")
    _write_pem(files.ca_pem, ca_cert)
    _write_key(folder / "ca.key", ca_key)

    broker_key, broker_cert = _leaf(
        "localhost",
        ca_key,
        ca_cert,
        sans=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
        usage=[ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
    )
    _write_pem(files.broker_pem, broker_cert, ca_cert)
    _write_key(files.broker_key, broker_key)
    _write_p12(files.broker_keystore, "broker", broker_key, broker_cert, ca_cert, password)

    client_key, client_cert = _leaf(
        CLIENT_CN, ca_key, ca_cert, sans=[], usage=[ExtendedKeyUsageOID.CLIENT_AUTH]
    )
    _write_pem(files.client_pem, client_cert, ca_cert)
    _write_key(files.client_key, client_key)
    _write_key(files.client_key_encrypted, client_key, password)
    _write_p12(files.client_keystore_p12, "client", client_key, client_cert, ca_cert, password)
    _keytool_convert(files.client_keystore_p12, files.client_keystore_jks, password)

    _import_ca(files.ca_pem, files.truststore_jks, "JKS", password)
    _import_ca(files.ca_pem, files.truststore_p12, "PKCS12", password)

    _stranger_key, stranger_cert = _ca("an unrelated CA")
    _write_pem(files.stranger_ca_pem, stranger_cert)
    _import_ca(files.stranger_ca_pem, files.stranger_truststore_jks, "JKS", password)
    return files


def _ca(name: str) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(
    common_name: str,
    ca_key: rsa.RSAPrivateKey,
    ca_cert: x509.Certificate,
    *,
    sans: list[x509.GeneralName],
    usage: list[x509.ObjectIdentifier],
) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                # RFC 2253 (what Java prints) lists the last one first:
                # "CN=<name>,O=srm-local", which PRINCIPAL_MAPPING maps to User:<name>.
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "srm-local"),
                    x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                ]
            )
        )
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def _write_pem(path: Path, *certs: x509.Certificate) -> None:
    path.write_bytes(b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs))


def _write_key(path: Path, key: rsa.RSAPrivateKey, password: str | None = None) -> None:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    )
    path.chmod(0o600)


def _write_p12(
    path: Path,
    alias: str,
    key: rsa.RSAPrivateKey,
    cert: x509.Certificate,
    ca_cert: x509.Certificate,
    password: str,
) -> None:
    # AES-256 with PBKDF2 (what Java 17 and OpenSSL 3 read); not the legacy RC2 default.
    encryption = (
        serialization.PrivateFormat.PKCS12.encryption_builder()
        .kdf_rounds(10_000)
        .key_cert_algorithm(pkcs12.PBES.PBESv2SHA256AndAES256CBC)
        .hmac_hash(hashes.SHA256())
        .build(password.encode())
    )
    data = pkcs12.serialize_key_and_certificates(alias.encode(), key, cert, [ca_cert], encryption)
    path.write_bytes(data)
    path.chmod(0o600)


def _keytool(*args: str) -> None:
    result = subprocess.run(["keytool", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"keytool {args[0]} failed: {result.stdout}{result.stderr}".strip())


def _import_ca(ca_pem: Path, store: Path, store_type: str, password: str) -> None:
    store.unlink(missing_ok=True)
    _keytool(
        "-importcert",
        "-noprompt",
        "-alias",
        "ca",
        "-file",
        str(ca_pem),
        "-keystore",
        str(store),
        "-storetype",
        store_type,
        "-storepass",
        password,
    )


def _keytool_convert(p12: Path, jks: Path, password: str) -> None:
    jks.unlink(missing_ok=True)
    _keytool(
        "-importkeystore",
        "-noprompt",
        "-srckeystore",
        str(p12),
        "-srcstoretype",
        "PKCS12",
        "-srcstorepass",
        password,
        "-destkeystore",
        str(jks),
        "-deststoretype",
        "JKS",
        "-deststorepass",
        password,
        "-destkeypass",
        password,
    )
