"""The driver's one HTTP client for the coordinator leader: tell it a flow's source
changed, report halts and losses, forward an operator's resume.

Reports are facts the leader appends to the event log; they are queued and sent again
(with a backoff) until the leader took them, in order, so a leader change or a
restarting coordinator loses none. The queue is bounded: a driver cut off from every
coordinator keeps its last 1000 reports. Each request bears the driver's token
(principal ``driver:<id>`` in the tokens file); a refused token (401, 403) is logged and
the report kept, so a token fixed in the file is used once the driver restarts.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Mapping

from srm_common.adapters.http_client import HttpCredentials

log = logging.getLogger(__name__)

MAX_QUEUED = 1000
TIMEOUT_S = 5.0


class CoordinatorUnavailable(Exception):
    """No leader answered; the message says what was tried."""


class CoordinatorClient:
    """Talks to whichever coordinator leads now (``leader_url()``, from the event log)."""

    def __init__(
        self,
        leader_url: Callable[[], str | None],
        driver: str,
        credentials: HttpCredentials | None = None,
    ) -> None:
        self._leader_url = leader_url
        self._driver = driver
        self.credentials = credentials or HttpCredentials()
        self._queue: deque[tuple[str, dict[str, object]]] = deque(maxlen=MAX_QUEUED)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._send_loop, name="coordinator reports", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def post(
        self, path: str, body: Mapping[str, object], on_behalf_of: str | None = None
    ) -> tuple[int, dict[str, object]]:
        """POST ``body`` to the leader now (for the principal ``on_behalf_of`` when this
        driver relays an operator's request); its status and answer, or
        CoordinatorUnavailable."""
        url = self._leader_url()
        if url is None:
            raise CoordinatorUnavailable("no coordinator leads the event log yet")
        request = urllib.request.Request(
            f"{url}{path}",
            data=json.dumps(body).encode(),
            headers=self.credentials.headers(on_behalf_of),
            method="POST",
        )
        try:
            with self.credentials.open(request, TIMEOUT_S) as response:
                return response.status, _json(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, _json(exc.read())
        except (urllib.error.URLError, OSError) as exc:
            raise CoordinatorUnavailable(f"the leader at {url} did not answer: {exc}") from exc

    def report(self, path: str, body: dict[str, object]) -> None:
        """Queue a report for the leader; sent in order, again until it is taken."""
        self._queue.append((path, {**body, "driver": self._driver}))
        self._wake.set()

    def _send_loop(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            if not self._queue:
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            path, body = self._queue[0]
            try:
                status, answer = self.post(path, body)
            except CoordinatorUnavailable as exc:
                log.warning("report not delivered yet: %s", exc)
                status, answer = 0, {}
            if 200 <= status < 300 or status in (400, 404, 422):
                if status >= 400:
                    log.error("the leader refused a report %s: %s", path, answer.get("error"))
                self._queue.popleft()
                backoff = 0.5
                continue
            if status in (401, 403):
                log.error(
                    "the leader refused this driver's credentials for %s: %s (token from %s)",
                    path,
                    answer.get("error"),
                    self.credentials.source,
                )
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 10.0)

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(2)


def _json(data: bytes) -> dict[str, object]:
    try:
        parsed = json.loads(data or b"{}")
    except ValueError:
        return {"error": data.decode(errors="replace")[:200]}
    return parsed if isinstance(parsed, dict) else {"answer": parsed}
