"""A copy slot's leases kept while the answer to its report is late.

Recording a report can take the driver longer than a lease (its progress write waits on
a busy target, its threads on a lock or the GIL under load). A slot that only waited
would see every unit's lease run out, and every partition stopped, re-verified and
restarted. So while an answer is outstanding past :data:`KEEP_AFTER_S`, the slot asks
for its leases alone, every :data:`KEEP_EVERY_S`, on a connection of its own (``POST
.../slots/{slot}/lease``, :mod:`srm_driver.copying.protocol`), and grants each unit its
flow's lease counted from when that request was sent, as for an answer. The driver
decides a keep under the same fence as an answer: a run that is over is told 410, and
the slot then stops as for a 410 answer. The answer itself is waited for up to
:data:`ANSWER_TIMEOUT_S`, and applied as usual when it comes; but when five keeps in a row
hear that no report of the slot is being recorded (``"recording": false``: the report or
its answer was lost on a connection that went dead), the slot reports again.
"""

from __future__ import annotations

import http.client
import json
import logging
import select
import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from srm_driver.copier.lease import Lease

log = logging.getLogger(__name__)

# How long a report's answer is waited for; the leases are kept meanwhile.
ANSWER_TIMEOUT_S = 20.0
KEEP_AFTER_S = 1.0
KEEP_EVERY_S = 1.0
_KEEP_TIMEOUT_S = 2.0
# Keeps in a row that found no report of the slot being recorded, after which the report
# is taken for lost (a connection dropped on its way) and sent again. Not fewer: a report
# still queued in the driver's HTTP server (parsed, or waiting for a thread) is not being
# recorded yet either, and one given up is answered to no one.
_IDLE_KEEPS = 5


class Leased(Protocol):
    """A unit, as far as its lease goes."""

    lease: Lease


class LeaseKeeper:
    """Keeps the leases of one slot run's units; see the module docstring."""

    def __init__(
        self,
        slot: int,
        path: str,
        authorization: str,
        run: Mapping[str, object],
        connect: Callable[[float], http.client.HTTPConnection],
        protocol: int,
    ) -> None:
        """``path``: the keep's URL path; ``connect``: a new connection to the driver with
        the given read timeout; ``protocol``: the slot's copy protocol (its control loop's)."""
        self._slot = slot
        self._path = path
        self._authorization = authorization
        self._body = json.dumps({"protocol": protocol, "run": dict(run)}, separators=(",", ":"))
        self._connect = connect

    def await_answer(
        self, connection: http.client.HTTPConnection, sent: float, units: Mapping[str, Leased]
    ) -> bool:
        """Wait until the answer to the report sent at ``sent`` (monotonic) starts to
        arrive, keeping the leases of ``units`` meanwhile once it is late; False when a
        keep was answered 410 (this run is over). Raises ``TimeoutError`` after
        :data:`ANSWER_TIMEOUT_S`."""
        sock = connection.sock
        if sock is None:
            return True
        deadline, keep_at = sent + ANSWER_TIMEOUT_S, sent + KEEP_AFTER_S
        idle = 0  # keeps in a row that found no report of this slot being recorded
        readable = select.poll()  # (no limit on the descriptor's number, unlike select())
        readable.register(sock, select.POLLIN)
        while True:
            if isinstance(sock, ssl.SSLSocket) and sock.pending():
                return True
            wait = max(0.0, min(deadline, keep_at) - time.monotonic())
            if readable.poll(wait * 1000):
                return True
            now = time.monotonic()
            if now >= deadline or idle >= _IDLE_KEEPS:
                raise TimeoutError(f"no answer to a report after {now - sent:.1f} s")
            if now >= keep_at:
                kept = self.keep(units)
                if kept is None:
                    return False
                idle = 0 if kept else idle + 1
                keep_at = time.monotonic() + KEEP_EVERY_S

    def keep(self, units: Mapping[str, Leased]) -> bool | None:
        """Ask for the leases alone and grant each unit its flow's, counted from when
        asked; None when answered 410. Anything else (no answer, an error) grants
        nothing: the leases run out by themselves. False when the driver said no report
        of this slot is being recorded (the one waited for was lost on its way, or its
        answer is)."""
        sent_at = time.monotonic_ns()
        connection: http.client.HTTPConnection | None = None
        try:
            connection = self._connect(_KEEP_TIMEOUT_S)
            connection.request(
                "POST",
                self._path,
                body=self._body.encode(),
                headers={"Content-Type": "application/json", "Authorization": self._authorization},
            )
            response = connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException):
            return True
        finally:
            if connection is not None:
                connection.close()
        if response.status == 410:
            return None
        try:
            body: Any = json.loads(payload) if response.status == 200 else {}
            for flow, entry in dict(body.get("units", {})).items():
                unit = units.get(flow)
                lease = entry.get("lease_ms") if isinstance(entry, dict) else None
                if unit is not None and isinstance(lease, int) and not isinstance(lease, bool):
                    unit.lease.grant(sent_at, lease)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.error("srm copy slot %d: cannot read a lease keep's answer: %r", self._slot, exc)
            return True
        return body.get("recording") is not False
