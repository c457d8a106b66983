"""srm-healthcheck (deploy/images/base/healthcheck.py) against fake servers: no Docker."""

from __future__ import annotations

import importlib.util
import socket
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "base" / "healthcheck.py"
_spec = importlib.util.spec_from_file_location("srm_healthcheck", _PATH)
assert _spec is not None and _spec.loader is not None
healthcheck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(healthcheck)


def _fake_broker(error_code: int) -> tuple[str, threading.Thread]:
    """A listener answering one ApiVersions request with ``error_code``."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with server, server.accept()[0] as conn:
            size = struct.unpack(">i", conn.recv(4))[0]
            request = b""
            while len(request) < size:
                request += conn.recv(size - len(request))
            api_key, version, correlation = struct.unpack(">hhi", request[:8])
            assert (api_key, version) == (18, 0)
            body = struct.pack(">ihi", correlation, error_code, 0)  # no api entries
            conn.sendall(struct.pack(">i", len(body)) + body)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return f"127.0.0.1:{server.getsockname()[1]}", thread


def _run(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr("sys.argv", ["srm-healthcheck", *args])
    return healthcheck.main()


def test_a_broker_answering_api_versions_is_healthy(monkeypatch: pytest.MonkeyPatch) -> None:
    address, thread = _fake_broker(0)
    assert _run(monkeypatch, "kafka", address) == 0
    thread.join(5)


def test_a_broker_answering_an_error_is_not(monkeypatch, capsys) -> None:
    address, thread = _fake_broker(35)
    assert _run(monkeypatch, "kafka", address) == 1
    thread.join(5)
    assert "error 35" in capsys.readouterr().err


def test_nothing_listening_is_not_healthy(monkeypatch, capsys) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    assert _run(monkeypatch, "kafka", f"127.0.0.1:{port}") == 1
    assert f"127.0.0.1:{port}" in capsys.readouterr().err


@pytest.fixture
def http_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/ok" else 503)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_http_answers_2xx_or_fails(monkeypatch, http_server: str) -> None:
    assert _run(monkeypatch, "http", f"{http_server}/ok") == 0
    assert _run(monkeypatch, "http", f"{http_server}/starting") == 1


def test_a_wrong_call_prints_the_usage(monkeypatch, capsys) -> None:
    assert _run(monkeypatch, "tcp", "x") == 2
    assert "srm-healthcheck kafka HOST:PORT" in capsys.readouterr().err
