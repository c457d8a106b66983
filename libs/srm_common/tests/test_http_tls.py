"""HTTPS listeners from SRM's listeners.https keys: stores of each type load, and a store or
setting that cannot be used is one line naming the key (never a password)."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID
from srm_common.adapters.http_tls import (
    certificate_name,
    listener_certificate,
    listener_tls,
    pinned_client_context,
    server_context,
)
from srm_common.errors import ConfigError
from srm_common.testing import self_signed

PASSWORD = "store-secret-42"


def _certificate(folder: Path) -> tuple[Path, Path, Path]:
    """A self-signed certificate as PEM (chain + key) and PKCS12, and its PEM alone."""
    made = self_signed()
    pem = folder / "service.pem"
    pem.write_bytes(made.certificate_pem + made.key_pem)
    p12 = folder / "service.p12"
    p12.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"service",
            made.key,
            made.certificate,
            None,
            serialization.BestAvailableEncryption(PASSWORD.encode()),
        )
    )
    ca = folder / "ca.pem"
    ca.write_bytes(made.certificate_pem)
    return pem, p12, ca


PREFIX = "listeners.https.ssl."


def test_no_listener_or_an_http_one_is_plain_http() -> None:
    assert listener_tls({}) is None
    assert listener_tls({"listeners": "http://0.0.0.0:8080"}) is None


def test_pem_and_pkcs12_keystores_load_and_client_auth_asks_for_certificates(
    tmp_path: Path,
) -> None:
    pem, p12, ca = _certificate(tmp_path)
    tls = listener_tls({"listeners": "https://h:1", PREFIX + "keystore.location": str(pem)})
    assert tls is not None and tls.keystore.type == "PEM" and not tls.asks_for_certificates
    server_context(tls)
    tls = listener_tls(
        {
            "listeners": "https://h:1",
            PREFIX + "keystore.location": str(p12),
            PREFIX + "keystore.password": PASSWORD,
            PREFIX + "truststore.location": str(ca),
            PREFIX + "client.auth": "Required",
        }
    )
    assert tls is not None and tls.keystore.type == "PKCS12" and tls.asks_for_certificates
    assert server_context(tls).verify_mode.name == "CERT_REQUIRED"


@pytest.mark.parametrize(
    ("keys", "key", "message"),
    [
        ({"listeners": "ftp://h:1"}, "listeners", "write https://HOST:PORT"),
        ({"listeners": "https://h:1"}, PREFIX + "keystore.location", "needs its certificate"),
        ({PREFIX + "keystore.location": "/nope.p12"}, PREFIX + "keystore.location", "no keystore"),
        ({PREFIX + "keystore.type": "BKS"}, PREFIX + "keystore.type", "not a store type"),
        ({PREFIX + "client.auth": "maybe"}, PREFIX + "client.auth", "none, requested or required"),
        ({PREFIX + "client.auth": "required"}, PREFIX + "truststore.location", "needs the CA"),
    ],
)
def test_a_bad_setting_is_one_line_naming_its_key(
    tmp_path: Path, keys: dict[str, str], key: str, message: str
) -> None:
    pem, _p12, _ca = _certificate(tmp_path)
    given = {"listeners": "https://h:1", PREFIX + "keystore.location": str(pem), **keys}
    if keys == {"listeners": "https://h:1"}:
        given = keys
    with pytest.raises(ConfigError) as error:
        listener_tls(given)
    assert message in str(error.value) and error.value.key == key, str(error.value)


def test_a_wrong_password_or_a_store_that_is_garbage_is_one_line_without_the_password(
    tmp_path: Path,
) -> None:
    _pem, p12, _ca = _certificate(tmp_path)
    garbage = tmp_path / "garbage.p12"
    garbage.write_bytes(b"\x00not a store" * 10)
    for path, password in ((p12, "wrong-password-77"), (garbage, PASSWORD)):
        tls = listener_tls(
            {
                "listeners": "https://h:1",
                PREFIX + "keystore.location": str(path),
                PREFIX + "keystore.password": password,
            }
        )
        assert tls is not None
        with pytest.raises(ConfigError) as error:
            server_context(tls)
        said = str(error.value)
        assert str(path) in said and "\n" not in said and password not in said, said


def test_the_principal_of_a_certificate_is_its_cn_else_its_first_dns_name() -> None:
    class Ssl:
        def __init__(self, peer: dict[str, object]) -> None:
            self.peer = peer

        def getpeercert(self) -> dict[str, object]:
            return self.peer

    cn = {"subject": ((("organizationName", "srm"),), (("commonName", "alice"),))}
    assert certificate_name(Ssl(cn)) == "alice"
    assert certificate_name(Ssl({"subject": (), "subjectAltName": (("DNS", "bot.x"),)})) == "bot.x"
    assert certificate_name(Ssl({})) is None  # none sent, or not verified
    assert certificate_name(None) is None


def _signed_by_a_ca(folder: Path) -> Path:
    """A server certificate signed by a CA (not self-signed), chain + key as one PEM, for
    a host name the client will not use."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "some CA")])
    now = datetime.datetime.now(datetime.UTC)

    def build(subject: x509.Name, public_key: object, ca: bool) -> x509.Certificate:
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(ca_name)
            .public_key(public_key)  # type: ignore[arg-type]
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )

    ca_cert = build(ca_name, ca_key.public_key(), ca=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "driver.elsewhere.example")])
    leaf = build(name, key.public_key(), ca=False)
    pem = folder / "signed.pem"
    pem.write_bytes(
        leaf.public_bytes(serialization.Encoding.PEM)
        + ca_cert.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return pem


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> None:
    """A TLS handshake over loopback between the two contexts (raises the client's error)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            connection, _ = listener.accept()
            try:
                with server.wrap_socket(connection, server_side=True) as tls:
                    tls.recv(1)
            except (ssl.SSLError, OSError):
                pass  # the client refused us

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            with (
                socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
                client.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
            ):
                tls.sendall(b"x")
        finally:
            thread.join(10)


@pytest.mark.parametrize("kind", ["self-signed", "signed by a CA"])
def test_a_pinned_client_trusts_the_listeners_own_certificate_and_no_other(
    tmp_path: Path, kind: str
) -> None:
    """The copy slots reach their driver at an address its certificate may not name, with
    a CA they do not have: they trust the listener's certificate itself."""
    pem = _certificate(tmp_path)[0] if kind == "self-signed" else _signed_by_a_ca(tmp_path)
    tls = listener_tls({"listeners": "https://h:1", PREFIX + "keystore.location": str(pem)})
    assert tls is not None
    certificate = listener_certificate(tls)
    assert certificate.count("BEGIN CERTIFICATE") == 1  # the listener's, not its CA's
    _handshake(server_context(tls), pinned_client_context(certificate))

    other = tmp_path / "other"
    other.mkdir()
    stranger = listener_certificate(
        listener_tls({"listeners": "https://h:1", PREFIX + "keystore.location": str(
            _certificate(other)[0])})  # type: ignore[arg-type]
    )  # fmt: skip
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(server_context(tls), pinned_client_context(stranger))
