"""The coordinator API's answers to bad bodies, oversized input, retried commands and
bad flags: one line, no Kafka needed."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from srm_common.adapters.http_auth import access_for
from srm_common.adapters.http_server import HttpServer
from srm_common.control.events import TopicsAllowRemoved
from srm_coordinator.cli import main
from srm_coordinator.http_api import create_app
from srm_coordinator.service import Coordinator
from srm_coordinator.site import CoordinatorSite
from srm_coordinator.testing import Fakes


def site_of(coordinator: Coordinator) -> CoordinatorSite:
    """The process of these tests: one coordinator, of backup's log."""
    return CoordinatorSite(coordinator.id, {coordinator.target: coordinator})


CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
flows:
  primary->backup: {enabled: true}
"""


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    return path


TOKEN = "test-token-of-alice-0123456789"
ACCESS = access_for({"alice": TOKEN})


def _post(url: str, body: object, token: str | None = TOKEN) -> tuple[int, dict[str, object]]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"flow": "primary->backup", "kind": "tables", "action": "add", "patterns": ["x"]}, "kind"),
        (
            {"flow": "primary->backup", "kind": "topics", "action": "add", "patterns": []},
            "patterns",
        ),
        ({"kind": "topics", "action": "add", "patterns": ["x"]}, "flow"),
        ([1, 2], "body"),
    ],
)
def test_a_bad_command_body_is_one_line_naming_the_field(
    standby: Coordinator, body: object, field: str
) -> None:
    server = HttpServer(create_app(site_of(standby), ACCESS), host="127.0.0.1", port=0, name="test")
    server.start()
    try:
        status, answer = _post(f"{server.url}/v1/commands/patterns", body)
    finally:
        server.stop()
    assert status == 422
    error = str(answer["error"])
    assert error.startswith("bad request: ") and field in error and "\n" not in error


def test_a_standby_answers_commands_with_503(standby: Coordinator) -> None:
    server = HttpServer(create_app(site_of(standby), ACCESS), host="127.0.0.1", port=0, name="test")
    server.start()
    try:
        body = {"flow": "primary->backup", "kind": "topics", "action": "add", "patterns": ["x"]}
        status, answer = _post(f"{server.url}/v1/commands/patterns", body)
    finally:
        server.stop()
    assert status == 503 and answer["error"] == "this coordinator is a standby"
    assert answer["outcome"] == "not applied"


def test_a_command_not_carried_out_in_time_is_a_504_with_the_reason(
    leading: Coordinator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No loop runs: the command is never reached.
    server = HttpServer(create_app(site_of(leading), ACCESS), host="127.0.0.1", port=0, name="test")
    server.start()
    submit = leading.submit
    monkeypatch.setattr(leading, "submit", lambda command, by: submit(command, by, timeout=0.1))
    try:
        body = {"flow": "primary->backup", "kind": "topics", "action": "add", "patterns": ["x"]}
        status, answer = _post(f"{server.url}/v1/commands/patterns", body)
    finally:
        server.stop()
    assert status == 504
    assert "withdrawn and not applied" in str(answer["error"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "99999"], "'99999' is not a port"),
        (["--port", "http"], "'http' is not a port"),
        (["--set", "srm.control.cluster=nowhere"], "unknown cluster alias 'nowhere'"),
        (["--set", "srm.driver.session.timeout.ms=soon"], "srm.driver.session.timeout.ms"),
        (["--state-file", "/nonexistent-dir/c1.json"], "cannot write the log memory"),
    ],
)
def test_bad_flags_are_one_message_and_exit_2(
    config_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code = main(["--config", str(config_path), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    # Our own checks print one line; argparse's (the port type) print its usage first.
    assert message in err[-1] and not any("Traceback" in line for line in err), err


# -- a leading coordinator behind the API (fixtures of conftest.py) ---------------------


@pytest.fixture
def served(leading: Coordinator) -> Iterator[str]:
    """The API of the ``leading`` coordinator, its loop running every 20 ms."""
    server = HttpServer(create_app(site_of(leading), ACCESS), host="127.0.0.1", port=0, name="test")
    server.start()
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            leading._round()
            stop.wait(0.02)

    rounds = threading.Thread(target=loop, daemon=True)
    rounds.start()
    try:
        yield server.url
    finally:
        stop.set()
        rounds.join(5)
        server.stop()


def _patterns(action: str, *patterns: str, **extra: object) -> dict[str, object]:
    return {
        "flow": "primary->backup",
        "kind": "topics",
        "action": action,
        "patterns": patterns,
        **extra,
    }


def test_a_body_over_1_mib_is_413_before_parsing_and_the_leader_goes_on(
    leading: Coordinator, fakes: Fakes, served: str
) -> None:
    epoch = leading.state.leader.epoch if leading.state.leader else None
    body = _patterns("add", *(f"t{i}-" + "x" * 1000 for i in range(1100)))
    data = json.dumps(body).encode()
    assert len(data) > 1_100_000
    status, answer = _post(f"{served}/v1/commands/patterns", body)
    assert status == 413
    assert answer["outcome"] == "not applied"
    assert f"request body of {len(data)} bytes too large: at most 1048576 bytes" in str(
        answer["error"]
    )
    # The same body streamed without a Content-Length: refused as it passes the limit.
    host, port = served.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    chunks = (data[i : i + 65536] for i in range(0, len(data), 65536))
    connection.request(
        "POST",
        "/v1/commands/patterns",
        body=chunks,
        encode_chunked=True,
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    response = connection.getresponse()
    assert response.status == 413 and b"at most 1048576 bytes" in response.read()
    connection.close()
    # The leader did not notice: same term, nothing of the body in the log, still deciding.
    assert leading.leading and leading.state.leader is not None
    assert leading.state.leader.epoch == epoch
    assert not [e for e in fakes.writer.appended if e.command_id is not None]
    status, answer = _post(f"{served}/v1/commands/patterns", _patterns("add", "payments"))
    assert (status, answer["outcome"]) == (200, "applied")


def test_a_retry_after_the_command_was_applied_is_answered_already_applied(
    leading: Coordinator, fakes: Fakes, served: str
) -> None:
    """A removal sent twice under one id (its first answer was lost): applied once, and
    the retry is not refused for removing what is no longer there."""
    body = _patterns("remove", "orders", request_id="r-1", by="alice@h via srm-control")
    first = _post(f"{served}/v1/commands/patterns", body)
    again = _post(f"{served}/v1/commands/patterns", body)
    assert first[0] == 200 and first[1]["outcome"] == "applied"
    assert first[1]["changes"] == ["topics allowlist of primary->backup: - orders"]
    assert again[0] == 200 and again[1]["outcome"] == "already applied"
    assert again[1]["changes"] == []
    # The audit names the authenticated principal; the body's "by" is only a note.
    assert again[1]["applied"]["by"] == "alice [note: alice@h via srm-control]"  # type: ignore[index]
    recorded = [e for e in fakes.writer.appended if e.command_id == "r-1"]
    assert [type(e.event) for e in recorded] == [TopicsAllowRemoved]
    # Without the id the same removal is decided again, and refused.
    status, answer = _post(f"{served}/v1/commands/patterns", _patterns("remove", "orders"))
    assert (status, answer["outcome"]) == (400, "not applied")


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (
            _patterns("add", *(f"t{i}" for i in range(101))),
            400,
            "101 patterns for the topics allowlist of primary->backup: at most 100 per command",
        ),
        (_patterns("add", "x" * 1001), 400, "a pattern of 1001 characters"),
        (_patterns("add", "x", by="u" * 201), 422, "by: String should have at most 200"),
        (_patterns("add", "x", request_id="r" * 65), 422, "request_id: String should have"),
        (_patterns("add", "x", request_id="a b"), 422, "request_id: String should match"),
    ],
    ids=["101 patterns", "long pattern", "long by", "long request_id", "bad request_id"],
)
def test_input_over_a_limit_is_refused_naming_it_and_the_leader_goes_on(
    leading: Coordinator,
    fakes: Fakes,
    served: str,
    body: dict[str, object],
    status: int,
    message: str,
) -> None:
    answer = _post(f"{served}/v1/commands/patterns", body)
    assert answer[0] == status and message in str(answer[1]["error"]), answer
    assert answer[1]["outcome"] == "not applied"
    assert leading.leading and not [e for e in fakes.writer.appended if e.command_id]


def test_every_post_route_refuses_a_request_without_a_principal(
    leading: Coordinator, fakes: Fakes, served: str
) -> None:
    """Enumerates the app's routes, so a POST route added later is covered too."""
    app = create_app(site_of(leading), ACCESS)
    posts = sorted(
        route.path  # type: ignore[attr-defined]
        for route in app.routes
        if "POST" in getattr(route, "methods", set())
    )
    assert len(posts) >= 5, posts
    before = leading.state.digest()
    statuses = {}
    for path in posts:
        url = served + path.replace("{source}", "primary").replace("{target}", "backup")
        statuses[path] = _post(url, _patterns("add", "payments"), token=None)
        wrong = _post(url, _patterns("add", "payments"), token="not-the-token-0123456789")
        assert wrong[0] == 401, (path, wrong)
    print("coordinator, unauthenticated POST:", {p: s for p, (s, _a) in statuses.items()})
    assert {s for s, _ in statuses.values()} == {401}, statuses
    assert all("Authorization: Bearer" in str(a["error"]) for _, a in statuses.values())
    assert leading.state.digest() == before, "an unauthenticated POST changed the state"
    assert not [e for e in fakes.writer.appended if e.command_id is not None]


def test_a_command_is_recorded_as_its_principal_and_a_relay_as_on_behalf(
    leading: Coordinator, fakes: Fakes, served: str
) -> None:
    status, _ = _post(f"{served}/v1/commands/patterns", _patterns("add", "p1", request_id="a-1"))
    assert status == 200
    recorded = [e for e in fakes.writer.appended if e.command_id == "a-1"]
    assert recorded and {e.by for e in recorded} == {"alice"}
    # alice may not claim to act for someone else: only delegators (api-gateway, driver:*).
    request = urllib.request.Request(
        f"{served}/v1/commands/patterns",
        data=json.dumps(_patterns("add", "p2")).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "X-SRM-On-Behalf-Of": "bob"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 403


def test_a_request_naming_another_host_is_refused(served: str) -> None:
    """DNS rebinding: a page's own name resolving to 127.0.0.1 is in its Host."""
    host, port = served.removeprefix("http://").split(":")
    for name, expected in (("evil.example", 421), ("localhost", 200), ("127.0.0.1", 200)):
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        connection.request("GET", "/v1/leader", headers={"Host": f"{name}:{port}"})
        assert connection.getresponse().status == expected, name
        connection.close()


def test_a_commands_events_continue_the_callers_trace_when_it_sends_traceparent(
    leading: Coordinator, fakes: Fakes, served: str
) -> None:
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    request = urllib.request.Request(
        f"{served}/v1/commands/patterns",
        data=json.dumps(_patterns("add", "traced")).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {TOKEN}",
            "traceparent": parent,
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    allowed = [e for e in fakes.writer.appended if e.command_id and e.trace is not None]
    assert allowed and {e.trace.trace_id for e in allowed} == {parent.split("-")[1]}  # type: ignore[union-attr]
