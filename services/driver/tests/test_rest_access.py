"""The driver's REST API refuses every change without a principal, and its copy slots'
channel takes only the per-run secret (no Spark, no Kafka: refused before any handler)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from srm_common.adapters.http_auth import access_for
from srm_common.adapters.http_server import HttpServer
from srm_driver.rest import copier_principal, create_app

ADMIN = "an-operators-token-0123456789"


def _post(url: str, token: str | None) -> int:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        url, data=json.dumps({"from": "copy-end"}).encode(), headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


class _Settings:
    driver_id = "d1"


class _Driver:
    settings = _Settings()


def test_every_post_route_is_401_without_a_principal_and_403_for_another_on_the_slot_channel() -> (
    None
):
    access = access_for({"admin": ADMIN})
    access.add_token(copier_principal("d1"), "the-per-run-secret-0123456789")
    app = create_app(_Driver(), access)  # type: ignore[arg-type]
    posts = sorted(
        route.path  # type: ignore[attr-defined]
        for route in app.routes
        if "POST" in getattr(route, "methods", set())
    )
    assert len(posts) >= 3, posts
    server = HttpServer(app, host="127.0.0.1", port=0, name="test", access=access)
    server.start()
    try:
        statuses = {}
        for path in posts:
            url = server.url + (
                path.replace("{source}", "primary")
                .replace("{target}", "backup")
                .replace("{topic}", "orders")
                .replace("{partition}", "0")
                .replace("{job}", "j1")
                .replace("{slot}", "0")
            )
            statuses[path] = _post(url, None)
        slot = f"{server.url}/internal/v1/copy/j1/slots/0"
        by_admin = _post(slot, ADMIN)
    finally:
        server.stop()
    print("driver, unauthenticated POST:", statuses)
    assert set(statuses.values()) == {401}, statuses
    # An operator's token is not the copy slots' secret.
    assert by_admin == 403


class _Copy:
    """The copy service's two slot calls, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int, object]] = []

    def on_report(self, job: str, slot: int, body: object) -> tuple[int, dict[str, object]]:
        self.calls.append(("report", job, slot, body))
        return 200, {"answered": "report"}

    def on_keep(self, job: str, slot: int, body: object) -> tuple[int, dict[str, object]]:
        self.calls.append(("keep", job, slot, body))
        return 410, {"error": "over"}


class _Runtime:
    def __init__(self) -> None:
        self.copy = _Copy()


def test_a_slots_report_and_its_lease_keep_reach_their_own_handlers() -> None:
    secret = "the-per-run-secret-0123456789"
    access = access_for({"admin": ADMIN})
    access.add_token(copier_principal("d1"), secret)
    driver = _Driver()
    driver.runtime = _Runtime()  # type: ignore[attr-defined]
    server = HttpServer(
        create_app(driver, access), host="127.0.0.1", port=0, name="t", access=access
    )  # type: ignore[arg-type]
    server.start()
    try:
        slot = f"{server.url}/internal/v1/copy/j1/slots/3"
        assert _post(slot, secret) == 200
        assert _post(f"{slot}/lease", secret) == 410, "the keep's own status"
    finally:
        server.stop()
    calls = driver.runtime.copy.calls  # type: ignore[attr-defined]
    assert [(kind, job, slot) for kind, job, slot, _ in calls] == [
        ("report", "j1", 3),
        ("keep", "j1", 3),
    ]
    assert calls[1][3] == {"from": "copy-end"}, "the parsed body"
