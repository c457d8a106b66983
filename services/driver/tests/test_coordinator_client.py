"""The driver's client of the leader bears its token, and a report the leader refuses
for its credentials is kept and sent again, not dropped (a fixed token file and a
restart lose nothing still queued)."""

from __future__ import annotations

import threading
import time

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from srm_common.adapters.http_client import HttpCredentials
from srm_common.adapters.http_server import HttpServer
from srm_driver.coordinator_client import CoordinatorClient

TOKEN = "the-drivers-token-0123456789"


def test_a_report_refused_for_its_credentials_is_kept_and_sent_again() -> None:
    seen: list[tuple[str | None, dict[str, object]]] = []
    accept = threading.Event()
    app = FastAPI()

    @app.post("/v1/flows/primary/backup/partitions/halted")
    async def halted(request: Request) -> JSONResponse:
        seen.append((request.headers.get("authorization"), await request.json()))
        if not accept.is_set():
            return JSONResponse({"error": "the bearer token is no one's"}, status_code=401)
        return JSONResponse({"outcome": "applied"})

    server = HttpServer(app, host="127.0.0.1", port=0, name="fake leader")
    server.start()
    client = CoordinatorClient(lambda: server.url, "d1", HttpCredentials(TOKEN))
    client.start()
    try:
        client.report("/v1/flows/primary/backup/partitions/halted", {"topic": "orders"})
        deadline = time.monotonic() + 10
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(seen) >= 2, "a refused report was dropped instead of sent again"
        accept.set()
        refused = len(seen)
        deadline = time.monotonic() + 15
        while len(seen) == refused and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)  # taken once: nothing more is sent
        assert len(seen) == refused + 1
    finally:
        client.close()
        server.stop()
    assert {auth for auth, _ in seen} == {f"Bearer {TOKEN}"}
    assert all(body == {"topic": "orders", "driver": "d1"} for _, body in seen)
