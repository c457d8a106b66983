"""Commands through the gateway: the principal, the forward to the leader on the
caller's behalf (following a standby's redirect), and the outcome when no coordinator
can be reached."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from srm_api_gateway.testing import RELAY_TOKEN, history, served
from srm_common.adapters.http_server import HttpServer
from srm_common.config.model import SrmConfig
from srm_common.control.events import CoordinatorElected, Envelope

TOKEN = "a-token-of-at-least-16-chars"
COMMAND = {
    "flow": "primary->backup",
    "kind": "topics",
    "action": "add",
    "patterns": ["sales.*"],
    "by": "ops@host",
}


@contextmanager
def coordinator(answer: tuple[int, dict] | None = None) -> Iterator[tuple[str, list[dict]]]:  # type: ignore[type-arg]
    """A coordinator's command endpoint that records what it got."""
    got: list[dict] = []  # type: ignore[type-arg]
    app = FastAPI()

    @app.post("/v1/commands/{verb}")
    async def command(verb: str, request: Request) -> JSONResponse:
        got.append(
            {
                "verb": verb,
                **json.loads(await request.body()),
                "headers": {
                    k: request.headers.get(k) for k in ("authorization", "x-srm-on-behalf-of")
                },
                "traceparent": request.headers.get("traceparent"),
            }
        )
        status, body = answer or (200, {"outcome": "applied", "changes": ["+ sales.*"]})
        return JSONResponse(body, status_code=status)

    server = HttpServer(app, host="127.0.0.1", port=0, name="fake coordinator")
    server.start()
    try:
        yield server.url, got
    finally:
        server.stop()


def led_by(url: str) -> list[Envelope]:
    log = history()
    return [*log, Envelope(CoordinatorElected("c1", url, 1), 1, "c1", None, len(log))]


def post(url: str, body: object, token: str | None = TOKEN, raw: bytes | None = None):  # type: ignore[no-untyped-def]
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_command_of_a_principal_reaches_the_leader_on_its_behalf(
    config: SrmConfig,
) -> None:
    with (
        coordinator() as (leader, got),
        served(config, envelopes=led_by(leader), token=TOKEN) as gw,
    ):
        status, answer = post(f"{gw}/v1/commands/patterns", COMMAND)
    assert (status, answer["outcome"]) == (200, "applied")
    # The gateway bears its own token and names the caller; the body's "by" is a note.
    headers = {"authorization": f"Bearer {RELAY_TOKEN}", "x-srm-on-behalf-of": "ops"}
    assert [{k: v for k, v in g.items() if k != "traceparent"} for g in got] == [
        {**COMMAND, "verb": "patterns", "headers": headers}
    ]


def test_the_leader_gets_the_callers_trace_when_the_command_came_with_traceparent(
    config: SrmConfig,
) -> None:
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    with (
        coordinator() as (leader, got),
        served(config, envelopes=led_by(leader), token=TOKEN) as gw,
    ):
        request = urllib.request.Request(
            f"{gw}/v1/commands/patterns",
            data=json.dumps(COMMAND).encode(),
            headers={"Authorization": f"Bearer {TOKEN}", "traceparent": parent},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
    sent = str(got[0]["traceparent"])
    # The same trace; the parent is the gateway's own span, not the caller's.
    assert sent.split("-")[1] == parent.split("-")[1] and sent != parent


def test_without_a_token_or_with_a_wrong_one_nothing_is_forwarded(config: SrmConfig) -> None:
    with coordinator() as (leader, got):
        with served(config, envelopes=led_by(leader)) as gw:
            status, answer = post(f"{gw}/v1/commands/patterns", COMMAND)
            assert status == 401 and "no tokens file" in answer["error"]
        with served(config, envelopes=led_by(leader), token=TOKEN) as gw:
            status, answer = post(f"{gw}/v1/commands/patterns", COMMAND, token="wrong-token")
            assert status == 401 and answer["outcome"] == "not applied"
            status, _ = post(f"{gw}/v1/commands/patterns", COMMAND, token=None)
            assert status == 401
            status, answer = post(f"{gw}/v1/commands/drop-everything", COMMAND)
            assert status == 404 and "known: patterns, resume" in answer["error"]
            status, answer = post(f"{gw}/v1/commands/patterns", None, raw=b"x" * 1_100_000)
            assert status == 413
    assert got == []


def test_a_standby_names_the_leader_and_the_command_follows(config: SrmConfig) -> None:
    with coordinator() as (leader, got):
        redirect = (503, {"error": "this coordinator is a standby", "leader": leader})
        with coordinator(redirect) as (standby, asked_standby):
            with served(config, envelopes=led_by(standby), token=TOKEN) as gw:
                status, answer = post(f"{gw}/v1/commands/resume", {"flow": "primary->backup"})
    assert status == 200 and len(asked_standby) == 1 and got[0]["verb"] == "resume"


def test_no_leader_or_an_unreachable_one_is_not_applied(config: SrmConfig) -> None:
    with served(config, token=TOKEN) as gw:
        status, answer = post(f"{gw}/v1/commands/patterns", COMMAND)
        assert status == 503 and answer["outcome"] == "not applied"
    with coordinator() as (gone, _got):
        pass  # the port is free again: nothing answers there
    with served(config, envelopes=led_by(gone), token=TOKEN) as gw:
        status, answer = post(f"{gw}/v1/commands/patterns", COMMAND)
    assert status == 503 and answer["outcome"] == "not applied"


def test_every_mutating_route_refuses_a_request_without_a_principal(config: SrmConfig) -> None:
    """Enumerates the app's routes, so a route added later is covered too."""
    from srm_api_gateway.http_api import create_app

    app = create_app(config, None)  # type: ignore[arg-type]
    mutating = sorted(
        (method, route.path)  # type: ignore[attr-defined]
        for route in app.routes
        for method in getattr(route, "methods", set()) - {"GET", "HEAD", "OPTIONS"}
    )
    assert ("POST", "/v1/commands/{verb}") in mutating
    with coordinator() as (leader, got):
        with served(config, envelopes=led_by(leader), token=TOKEN) as gw:
            statuses = {}
            for method, path in mutating:
                url = gw + path.replace("{verb}", "patterns")
                request = urllib.request.Request(
                    url, data=json.dumps(COMMAND).encode(), method=method
                )
                try:
                    urllib.request.urlopen(request, timeout=10)
                    statuses[path] = 200
                except urllib.error.HTTPError as exc:
                    statuses[path] = exc.code
            # A browser's cross-site POST with a valid token is refused too.
            request = urllib.request.Request(
                f"{gw}/v1/commands/patterns",
                data=json.dumps(COMMAND).encode(),
                headers={"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"},
            )
            try:
                urllib.request.urlopen(request, timeout=10)
                cross_site = 200
            except urllib.error.HTTPError as exc:
                cross_site = exc.code
    print("api-gateway, unauthenticated POST:", statuses, "cross-site POST:", cross_site)
    assert set(statuses.values()) == {401} and cross_site == 403
    assert got == [], "a refused command reached the leader"
