"""Serve an ASGI app (FastAPI) from a background thread of a service process.

The socket is bound before the thread starts, so port 0 gets a real port that the
service can advertise (drivers put their URL in heartbeats, coordinators in the log),
and a port already in use is one clear error instead of a log line in a thread. With a
:class:`~srm_common.adapters.http_tls.ListenerTls` the listener is HTTPS (the URL says
``https``); the names the service is reached by join its access's allowed hosts.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from srm_common.errors import SrmError

if TYPE_CHECKING:
    from srm_common.adapters.http_auth import Access
    from srm_common.adapters.http_tls import ListenerTls


class HttpServer:
    """``url`` is where the app answers once :meth:`start` returned."""

    def __init__(
        self,
        app: Any,
        *,
        host: str,
        port: int,
        name: str,
        access: Access | None = None,
        tls: ListenerTls | None = None,
    ) -> None:
        import uvicorn

        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((host, port))
        except OSError as exc:
            self._socket.close()
            raise SrmError(
                f"{name}: cannot listen on {host}:{port}: {exc.strerror}; choose another"
                " port (or 0 for any free one)"
            ) from exc
        bound_port = self._socket.getsockname()[1]
        advertised = socket.gethostname() if host in ("0.0.0.0", "") else host
        self.url = f"{'https' if tls else 'http'}://{advertised}:{bound_port}"
        if access is not None:
            access.allow_hosts([host, advertised, "localhost"])
        options: dict[str, Any] = {}
        if tls is not None:
            from srm_common.adapters.http_tls import peer_certificate_protocol, server_context

            try:
                context = server_context(tls)
            except SrmError:
                self._socket.close()
                raise
            options = {
                "http": peer_certificate_protocol(),
                "ssl_context_factory": lambda _config, _default: context,
            }
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="off", **options
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name=name, daemon=True
        )

    def start(self, timeout: float = 10.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(5)
        self._socket.close()
