"""The coordinator API's answers to bad bodies and bad flags: one line, no Kafka needed."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from srm_common.adapters.http_server import HttpServer
from srm_common.config import load_config
from srm_common.config.control import control_settings
from srm_coordinator.cli import main
from srm_coordinator.http_api import create_app
from srm_coordinator.service import Coordinator

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


def _post(url: str, body: object) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
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
    config_path: Path, body: object, field: str
) -> None:
    config = load_config(config_path)
    coordinator = Coordinator(config, control_settings(config), coordinator_id="c-test")
    server = HttpServer(create_app(coordinator), host="127.0.0.1", port=0, name="test")
    server.start()
    try:
        status, answer = _post(f"{server.url}/v1/commands/patterns", body)
    finally:
        server.stop()
    assert status == 422
    error = str(answer["error"])
    assert error.startswith("bad request: ") and field in error and "\n" not in error


def test_a_standby_answers_commands_with_503(config_path: Path) -> None:
    config = load_config(config_path)
    coordinator = Coordinator(config, control_settings(config), coordinator_id="c-test")
    server = HttpServer(create_app(coordinator), host="127.0.0.1", port=0, name="test")
    server.start()
    try:
        body = {"flow": "primary->backup", "kind": "topics", "action": "add", "patterns": ["x"]}
        status, answer = _post(f"{server.url}/v1/commands/patterns", body)
    finally:
        server.stop()
    assert status == 503 and answer["error"] == "this coordinator is a standby"


def test_a_command_not_carried_out_in_time_is_a_504_with_the_reason(
    config_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(config_path)
    coordinator = Coordinator(config, control_settings(config), coordinator_id="c-test")
    coordinator.leading = True  # no loop runs: the command is never reached
    server = HttpServer(create_app(coordinator), host="127.0.0.1", port=0, name="test")
    server.start()
    submit = coordinator.submit
    monkeypatch.setattr(coordinator, "submit", lambda command, by: submit(command, by, timeout=0.1))
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
        (["--projection", "nonsense://x"], "cannot open projection database"),
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
