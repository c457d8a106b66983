"""A copy slot's line to its driver: the HTTP connection its reports (and lease keeps)
go over, and the driver's answer as the slot reads it. What the slot does with an
answer is :class:`~srm_driver.copier.control.SlotRunner`'s.

The connection is kept open between reports and opened again after any failure. Over
``https`` it trusts one certificate only: the driver's own, handed over with the job
(:func:`srm_common.adapters.http_tls.pinned_client_context`).

An answer (:func:`read_answer`): 410 means the driver no longer knows this job (the slot
ends); any other status but 200, or a body that cannot be read, is no answer (the
leases run out by themselves unless a later report is answered); a driver that does not
speak :data:`PROTOCOL` is refused with the reason (``incompatible``)."""

from __future__ import annotations

import http.client
import json
import logging
import ssl
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from srm_common.adapters.http_tls import pinned_client_context

log = logging.getLogger(__name__)

PROTOCOL = 2
_CONNECT_TIMEOUT_S = 2.0


@dataclass
class Answer:
    gone: bool = False
    version: int = -1
    lease_ms: int = 0
    report_ms: int = 200
    stop: bool = False
    units: dict[str, Any] = field(default_factory=dict)
    refused: set[str] = field(default_factory=set)
    base: int | None = None
    full: bool = False
    incompatible: str | None = None


def read_answer(slot: int, status: int, payload: bytes) -> Answer | None:
    """The driver's answer to slot ``slot``'s report (HTTP ``status``, body ``payload``);
    None when there is none to act on (logged)."""
    if status == 410:
        return Answer(gone=True)
    if status != 200:
        log.warning(
            "srm copy slot %d: the driver answered %d: %s",
            slot,
            status,
            payload[:500].decode("utf-8", "replace"),
        )
        return None
    try:
        body = json.loads(payload)
        protocol = body.get("protocol", 1)
        if protocol != PROTOCOL or isinstance(protocol, bool):
            return Answer(
                incompatible=f"the driver speaks copy protocol {protocol} and this slot"
                f" {PROTOCOL}: the driver and its copy slots come from different versions"
            )
        base = body.get("base")
        return Answer(
            base=base if isinstance(base, int) and not isinstance(base, bool) else None,
            full=body.get("full") is True,
            version=int(body["version"]),
            lease_ms=int(body["lease_ms"]),
            report_ms=int(body["report_ms"]),
            stop=body.get("stop") is True,
            units=dict(body["units"]),
            refused={str(flow) for flow in body.get("refused") or ()},
        )
    except (ValueError, KeyError, TypeError) as exc:
        log.error("srm copy slot %d: cannot read the driver's answer: %r", slot, exc)
        return None


class DriverLine:
    """The connection to the driver at ``control_url`` (``server_certificate``: the
    driver's listener certificate, PEM, for ``https``)."""

    def __init__(self, control_url: str, server_certificate: str | None, read_timeout: float):
        url = urlsplit(control_url)
        self._https = url.scheme == "https"
        self._server_certificate = server_certificate
        self._host, self._port = url.hostname or "127.0.0.1", url.port
        self.base_path = url.path.rstrip("/")
        self._read_timeout = read_timeout
        self._connection: http.client.HTTPConnection | None = None

    def open(self, timeout: float) -> http.client.HTTPConnection:
        """A new connection to the driver, with ``timeout`` for each read."""
        connection: http.client.HTTPConnection
        if self._https:
            connection = http.client.HTTPSConnection(
                self._host,
                self._port,
                timeout=_CONNECT_TIMEOUT_S,
                context=pinned_client_context(self._server_certificate)
                if self._server_certificate
                else ssl.create_default_context(),
            )
        else:
            connection = http.client.HTTPConnection(
                self._host, self._port, timeout=_CONNECT_TIMEOUT_S
            )
        connection.connect()
        if connection.sock is not None:
            connection.sock.settimeout(timeout)
        return connection

    def connect(self) -> http.client.HTTPConnection:
        """The kept connection, opened now if there is none."""
        if self._connection is None:
            self._connection = self.open(self._read_timeout)
        return self._connection

    def disconnect(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
