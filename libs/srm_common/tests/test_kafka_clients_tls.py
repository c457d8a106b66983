"""Java stores (JKS, PKCS12, PEM) translated for librdkafka and Python's ssl, checked by a
real mutual-TLS handshake against a local TLS server that trusts only our CA."""

from __future__ import annotations

import datetime
import shutil
import socket
import ssl
import stat
import subprocess
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from srm_common.adapters import kafka_clients
from srm_common.adapters.kafka_clients import librdkafka_config, ssl_context
from srm_common.errors import ConfigError

NEEDS_KEYTOOL = pytest.mark.skipif(shutil.which("keytool") is None, reason="no JDK keytool")


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: str, signer, *, ca: bool
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False
        )
    return builder.sign(signer, hashes.SHA256())


class Pki:
    """A CA, a server certificate for localhost and a client certificate, as PEM files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        self.ca = _cert("test-ca", self.ca_key, "test-ca", self.ca_key, ca=True)
        self.server_key = ec.generate_private_key(ec.SECP256R1())
        self.server = _cert("localhost", self.server_key, "test-ca", self.ca_key, ca=False)
        self.client_key = ec.generate_private_key(ec.SECP256R1())
        self.client = _cert("srm-client", self.client_key, "test-ca", self.ca_key, ca=False)
        self.ca_pem = self._write("ca.pem", self.ca.public_bytes(serialization.Encoding.PEM))
        self.server_pem = self._write("server.pem", _pem(self.server_key, self.server, None))
        self.client_pem = self._write("client.pem", _pem(self.client_key, self.client, None))

    def _write(self, name: str, data: bytes) -> Path:
        path = self.root / name
        path.write_bytes(data)
        return path

    def keytool(self, *args: str) -> None:
        subprocess.run(["keytool", *args], check=True, capture_output=True, timeout=60)

    def truststore(self, kind: str, password: str) -> Path:
        path = self.root / f"trust.{kind.lower()}"
        self.keytool(
            "-importcert", "-noprompt", "-alias", "ca", "-file", str(self.ca_pem),
            "-keystore", str(path), "-storetype", kind, "-storepass", password,
        )  # fmt: skip
        return path

    def keystore(self, kind: str, password: str) -> Path:
        p12 = self.root / "client-src.p12"
        chain = [self.ca]
        p12.write_bytes(
            serialization.pkcs12.serialize_key_and_certificates(
                b"client",
                self.client_key,
                self.client,
                chain,
                serialization.BestAvailableEncryption(password.encode()),
            )
        )
        if kind == "PKCS12":
            return p12
        path = self.root / "client.jks"
        self.keytool(
            "-importkeystore", "-noprompt", "-srckeystore", str(p12), "-srcstoretype",
            "PKCS12", "-srcstorepass", password, "-destkeystore", str(path),
            "-deststoretype", "JKS", "-deststorepass", password, "-destkeypass", password,
        )  # fmt: skip
        return path


def _pem(key, cert: x509.Certificate, password: bytes | None) -> bytes:
    encryption = (
        serialization.BestAvailableEncryption(password)
        if password
        else serialization.NoEncryption()
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )
    return key_pem + cert.public_bytes(serialization.Encoding.PEM)


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki(tmp_path)


def _handshake(pki: Pki, client: ssl.SSLContext) -> str:
    """Connect ``client`` to a TLS server that requires a client certificate from our CA;
    returns the client certificate's CN as the server saw it."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.server_pem)
    server.load_verify_locations(pki.ca_pem)
    server.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[str] = []

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with server.wrap_socket(conn, server_side=True) as tls:
                subject = dict(x[0] for x in tls.getpeercert()["subject"])
                seen.append(subject["commonName"])
        except ssl.SSLError as exc:
            seen.append(f"refused: {exc.reason}")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with client.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.do_handshake()
    thread.join(10)
    listener.close()
    return seen[0] if seen else "no answer"


@NEEDS_KEYTOOL
@pytest.mark.parametrize("kind", ["JKS", "PKCS12"])
def test_mutual_tls_works_when_the_stores_are_java_stores(pki: Pki, kind: str) -> None:
    keys = {
        "security.protocol": "SSL",
        "ssl.truststore.type": kind,
        "ssl.truststore.location": str(pki.truststore(kind, "trust-pw")),
        "ssl.truststore.password": "trust-pw",
        "ssl.keystore.type": kind,
        "ssl.keystore.location": str(pki.keystore(kind, "key-pw")),
        "ssl.keystore.password": "key-pw",
    }
    context = ssl_context(keys)
    assert context is not None
    assert _handshake(pki, context) == "srm-client", "the server must see our client cert"
    config = librdkafka_config(keys)
    assert config["security.protocol"] == "SSL"
    assert not [k for k in config if k.startswith(("ssl.truststore", "ssl.keystore"))]
    for name in ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location"):
        mode = stat.S_IMODE(Path(config[name]).stat().st_mode)
        assert mode == 0o600, f"{name} must be private, is {oct(mode)}"
    key_text = Path(config["ssl.key.location"]).read_text()
    assert "ENCRYPTED PRIVATE KEY" in key_text, "the key on disk must stay encrypted"
    assert "test-ca" not in key_text


def test_mutual_tls_works_when_the_stores_are_pem_text(pki: Pki) -> None:
    key_pem = pki.client_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"kp"),
    ).decode()
    keys = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule"
        ' required username="u" password="p";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": pki.ca_pem.read_text(),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": key_pem,
        "ssl.keystore.certificate.chain": pki.client.public_bytes(
            serialization.Encoding.PEM
        ).decode(),
        "ssl.key.password": "kp",
    }
    context = ssl_context(keys)
    assert context is not None and _handshake(pki, context) == "srm-client"
    sasl = kafka_clients.aiokafka_security(keys)
    assert (sasl["sasl_mechanism"], sasl["sasl_plain_username"]) == ("SCRAM-SHA-512", "u")


def test_the_server_is_refused_when_the_trust_store_holds_another_ca(pki: Pki) -> None:
    (pki.root / "other").mkdir()
    other = Pki(pki.root / "other")
    keys = {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(other.ca_pem),
    }
    context = ssl_context(keys)
    assert context is not None
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(pki, context)


def test_a_wrong_store_password_is_one_line_naming_the_key(pki: Pki) -> None:
    keys = {
        "security.protocol": "SSL",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(pki.keystore("PKCS12", "right")),
        "ssl.keystore.password": "wrong-password",
    }
    with pytest.raises(ConfigError) as caught:
        librdkafka_config(keys)
    message = str(caught.value)
    assert "ssl.keystore.location" in message and "\n" not in message
    assert "wrong-password" not in message, "a password must never be shown"


@NEEDS_KEYTOOL
def test_a_wrong_jks_password_is_one_line_without_the_password(pki: Pki) -> None:
    keys = {
        "security.protocol": "SSL",
        "ssl.truststore.location": str(pki.truststore("JKS", "right-pw")),
        "ssl.truststore.password": "wrong-pw-123",
    }
    with pytest.raises(ConfigError) as caught:
        librdkafka_config(keys)
    assert "keytool" in str(caught.value) and "wrong-pw-123" not in str(caught.value)


def test_a_missing_store_file_is_one_line_naming_the_key(tmp_path: Path) -> None:
    keys = {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(tmp_path / "absent.p12"),
    }
    with pytest.raises(ConfigError, match="ssl.truststore.location.*absent.p12"):
        librdkafka_config(keys)


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("ssl.truststore.location", "PKCS12"),
        ("ssl.truststore.location", "PEM"),
        ("ssl.keystore.location", "PKCS12"),
        ("ssl.keystore.location", "PEM"),
    ],
)
def test_a_store_of_garbage_is_one_line_naming_the_key(tmp_path: Path, key: str, kind: str) -> None:
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x00\x01 not a store -----BEGIN CERTIFICATE-----\nxx\n")
    prefix = key.rsplit(".", 1)[0]
    keys = {
        "security.protocol": "SSL",
        f"{prefix}.type": kind,
        key: str(garbage),
        **(
            {"ssl.keystore.password": "pw"}
            if key.startswith("ssl.keystore") and kind != "PEM"
            else {}
        ),
    }
    with pytest.raises(ConfigError) as caught:
        librdkafka_config(keys)
    assert f"key '{key}'" in str(caught.value) and "\n" not in str(caught.value)


def test_java_tuning_keys_become_librdkafkas_and_java_only_ones_are_left_out() -> None:
    from srm_common.adapters.kafka_clients import java_tuning

    translated = java_tuning(
        {
            "bootstrap.servers": "b:9092",
            "batch.size": "262144",
            "buffer.memory": "67108864",
            "max.request.size": "16777216",
            "max.block.ms": "1000",
            "max.poll.records": "5000",
            "fetch.max.wait.ms": "100",
            "auto.offset.reset": "none",
            "key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
            "isolation.level": "read_committed",
            "security.protocol": "SSL",
            "receive.buffer.bytes": "-1",
            "send.buffer.bytes": "131072",
        }
    )
    assert translated == {
        "bootstrap.servers": "b:9092",
        "batch.size": "262144",
        "queue.buffering.max.kbytes": "65536",
        "message.max.bytes": "16777216",
        "fetch.wait.max.ms": "100",
        "auto.offset.reset": "error",
        "isolation.level": "read_committed",
        "security.protocol": "SSL",
        "socket.receive.buffer.bytes": "0",  # Java's -1: the kernel autotunes it
        "socket.send.buffer.bytes": "131072",
    }
    # librdkafka takes every one of them (it refuses an unknown key at construction).
    from confluent_kafka import Consumer, Producer

    producer_keys = {k: v for k, v in translated.items() if k not in ("fetch.wait.max.ms",
                     "auto.offset.reset", "isolation.level", "security.protocol")}  # fmt: skip
    Producer(producer_keys)
    Consumer({**translated, "group.id": "g", "security.protocol": "PLAINTEXT"}).close()
