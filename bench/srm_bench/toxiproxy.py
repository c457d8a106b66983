"""Toxiproxy, the TCP proxy that puts a round trip between the copy and the source.

``make bench --wan`` needs its server. It is looked for in ``$TOXIPROXY_SERVER``, then
``.cache/toxiproxy/server`` (where the bench builds it), then ``toxiproxy-server`` on the
PATH; when none is there it is built once with ``go install`` from the Go module proxy
(:data:`MODULE`, a pinned version) into ``.cache/toxiproxy``. Without Go the bench stops
with a message saying how to get either. Only ``make bench --wan`` needs it: nothing in
``make test`` does.

The server runs on a free loopback port for the length of the run, logs into the run
folder, and is stopped at the end (:class:`ToxiproxyServer` is a context manager). Its
HTTP API is driven with the standard library: one proxy per source broker, and toxics
(``latency`` both ways, ``bandwidth`` downstream) set per measurement.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any

from srm_local.paths import cache_dir
from srm_local.ports import free_ports

MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0"
HOST = "127.0.0.1"
PID_FILE = "toxiproxy.pid"


class ToxiproxyMissingError(RuntimeError):
    """No server binary, and it could not be built (the message says what to do)."""


def server_binary(build: bool = True) -> Path:
    """The server's path (see the module docstring); built with ``go install`` if absent."""
    given = os.environ.get("TOXIPROXY_SERVER")
    if given:
        if not Path(given).is_file():
            raise ToxiproxyMissingError(f"TOXIPROXY_SERVER={given} is not a file")
        return Path(given)
    built = cache_dir() / "toxiproxy" / "server"
    if built.is_file():
        return built
    on_path = shutil.which("toxiproxy-server")
    if on_path:
        return Path(on_path)
    if not build:
        raise ToxiproxyMissingError(missing_message())
    go = shutil.which("go")
    if go is None:
        raise ToxiproxyMissingError(missing_message())
    built.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [go, "install", MODULE],
        env={**os.environ, "GOBIN": str(built.parent)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or not built.is_file():
        raise ToxiproxyMissingError(
            f"'go install {MODULE}' failed (exit {done.returncode}):\n"
            f"{(done.stderr or done.stdout)[-1500:]}\n{missing_message()}"
        )
    return built


def missing_message() -> str:
    return (
        "make bench --wan needs Toxiproxy's server and Go to build it, and Go is not on the"
        " PATH. Either install Go (1.22 or later; the bench then runs"
        f" 'go install {MODULE}' into .cache/toxiproxy by itself), or build it elsewhere and"
        " point TOXIPROXY_SERVER at the binary (or put it on the PATH as toxiproxy-server)."
        " The bench without --wan needs neither."
    )


def stop_orphan(folder: Path) -> bool:
    """Stop the server a killed bench run left in ``folder`` (its pid file names the pid
    and the binary; a pid now used by another program is left alone)."""
    pid_file = folder / PID_FILE
    try:
        pid_text, _, binary = pid_file.read_text().strip().partition(" ")
        running = os.readlink(f"/proc/{int(pid_text)}/exe")
    except (OSError, ValueError):
        return False
    if running != binary:
        return False
    os.kill(int(pid_text), signal.SIGTERM)
    pid_file.unlink(missing_ok=True)
    return True


class ToxiproxyServer:
    """A Toxiproxy server on a free loopback port, and the part of its API the bench uses."""

    def __init__(self, binary: Path, log_path: Path) -> None:
        self.binary = binary
        self.log_path = log_path
        self.port = free_ports(1, HOST)[0]
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def __enter__(self) -> ToxiproxyServer:
        self._log = self.log_path.open("ab")
        self._process = subprocess.Popen(
            [str(self.binary), "-host", HOST, "-port", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        # For the next bench run, should this one be killed outright (stack.py).
        (self.log_path.parent / PID_FILE).write_text(
            f"{self._process.pid} {self.binary.resolve()}\n"
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                self._call("GET", "/proxies")
                return self
            except (OSError, RuntimeError, ValueError):
                if self._process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__(None, None, None)
                    raise RuntimeError(
                        f"Toxiproxy's server did not answer on {self.url}; see {self.log_path}"
                    ) from None
                time.sleep(0.1)

    def __exit__(self, *_exc: object) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        (self.log_path.parent / PID_FILE).unlink(missing_ok=True)
        if self._log is not None:
            self._log.close()

    def add_proxy(self, name: str, listen_port: int, upstream_port: int) -> None:
        self._call(
            "POST",
            "/proxies",
            {
                "name": name,
                "listen": f"{HOST}:{listen_port}",
                "upstream": f"{HOST}:{upstream_port}",
                "enabled": True,
            },
        )

    def set_round_trip(self, proxy: str, rtt_ms: int, window_bytes: int | None) -> None:
        """Toxics of ``proxy`` for the next measurement: half the round trip added each
        way, and at most ``window_bytes`` per round trip downstream (a client whose
        receive buffer is fixed: see ``srm_bench.wan``); none at 0 ms."""
        self.clear_toxics(proxy)
        if rtt_ms > 0:
            down, up = rtt_ms - rtt_ms // 2, rtt_ms // 2
            self._toxic(proxy, "latency_downstream", "latency", "downstream", {"latency": down})
            if up:
                self._toxic(proxy, "latency_upstream", "latency", "upstream", {"latency": up})
            if window_bytes:
                kb_s = max(1, round(window_bytes / (rtt_ms / 1000) / 1000))  # Toxiproxy's KB
                self._toxic(proxy, "window", "bandwidth", "downstream", {"rate": kb_s})

    def clear_toxics(self, proxy: str) -> None:
        for toxic in self._call("GET", f"/proxies/{proxy}/toxics") or []:
            self._call("DELETE", f"/proxies/{proxy}/toxics/{toxic['name']}")

    def _toxic(
        self, proxy: str, name: str, kind: str, stream: str, attributes: dict[str, int]
    ) -> None:
        body = {"name": name, "type": kind, "stream": stream, "toxicity": 1.0,
                "attributes": attributes}  # fmt: skip
        self._call("POST", f"/proxies/{proxy}/toxics", body)

    def _call(self, method: str, path: str, body: object = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            raise RuntimeError(
                f"Toxiproxy refused {method} {path}: {exc.code} {exc.read()[:500]!r}"
            ) from None
        return json.loads(text) if text.strip() else None
