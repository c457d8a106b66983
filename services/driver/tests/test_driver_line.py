"""A copy slot's connection to its driver over https: it trusts the one certificate the
driver handed it with the job, and no other (a real TLS listener on loopback)."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from srm_common.testing import self_signed
from srm_driver.copier.driver_link import DriverLine


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[int, str]]:
    """A TLS listener on loopback that completes handshakes; (port, its certificate PEM)."""
    made = self_signed("driver")
    pem = tmp_path / "driver.pem"
    pem.write_bytes(made.certificate_pem + made.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pem)
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            try:
                with context.wrap_socket(client, server_side=True):
                    pass  # the handshake is all a test asks for
            except (ssl.SSLError, OSError):
                client.close()  # the slot refused us: what some tests want

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], made.certificate_pem.decode()
    stop.set()
    thread.join(5)
    server.close()


def test_the_slot_reaches_a_driver_that_holds_the_pinned_certificate(listener) -> None:  # type: ignore[no-untyped-def]
    port, certificate = listener
    line = DriverLine(f"https://127.0.0.1:{port}/copy", certificate, 5.0)
    connection = line.open(5.0)
    try:
        assert connection.sock is not None
        assert connection.sock.getpeercert(binary_form=True)  # a TLS session to the driver
        assert line.base_path == "/copy"
    finally:
        connection.close()


def test_a_listener_with_another_certificate_is_refused(listener) -> None:  # type: ignore[no-untyped-def]
    port, _certificate = listener
    stranger = self_signed("driver").certificate_pem.decode()
    with pytest.raises(ssl.SSLCertVerificationError):
        DriverLine(f"https://127.0.0.1:{port}", stranger, 5.0).open(5.0)


def test_without_a_pinned_certificate_the_system_trust_decides(listener) -> None:  # type: ignore[no-untyped-def]
    """No certificate handed over: the system's CAs, which never signed the driver's."""
    port, _certificate = listener
    with pytest.raises(ssl.SSLCertVerificationError):
        DriverLine(f"https://127.0.0.1:{port}", None, 5.0).open(5.0)
