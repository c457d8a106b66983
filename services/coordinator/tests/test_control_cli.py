"""srm-control's answers to bad input: one line on stderr, a non-zero exit, no Kafka.

The configuration points at 127.0.0.1:9 (discard), and every case here fails before
the event log is read, so nothing connects.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from srm_common.control.state import ControlState, Leader
from srm_coordinator import control_cli
from srm_coordinator.control_cli import main

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
flows:
  primary->backup: {enabled: true}
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, list[str]]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err.splitlines()


def one_line(err: list[str]) -> str:
    assert len(err) == 1, err
    assert err[0].startswith("srm-control: ")
    return err[0]


@pytest.mark.parametrize("kind", ["topics", "groups"])
@pytest.mark.parametrize(
    "flags",
    [
        ["--source", "nowhere", "--target", "backup", "--list"],
        ["--source", "primary", "--target", "nowhere", "--add", "orders"],
    ],
)
def test_unknown_alias_is_one_line_naming_the_known_aliases(
    config: Path, capsys: pytest.CaptureFixture[str], kind: str, flags: list[str]
) -> None:
    code, out, err = run(capsys, "--config", str(config), kind, *flags)
    assert code != 0
    line = one_line(err)
    assert "unknown cluster alias 'nowhere'" in line
    assert "known aliases: primary, backup" in line
    assert out == ""


def test_no_action_is_one_line_listing_the_actions(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _out, err = run(
        capsys, "--config", str(config), "topics", "--source", "primary", "--target", "backup"
    )
    assert code != 0
    line = one_line(err)
    assert "--add" in line and "--add-blacklist" in line and "--list" in line
    assert "srm-control topics --help" in line


def test_same_source_and_target_is_one_line(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The client options may follow the subcommand, as in SRM's docs.
    args = ["topics", "--source", "primary", "--target", "primary", "--list"]
    code, _out, err = run(capsys, *args, "--config", str(config))
    assert code != 0
    assert "--source and --target must be different clusters" in one_line(err)


def test_empty_pattern_list_is_one_line(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(
        capsys,
        "--config",
        str(config),
        "groups",
        "--source",
        "primary",
        "--target",
        "backup",
        "--add",
        " , ",
    )
    assert code != 0
    assert "--add needs one or more names or regexes" in one_line(err)


def test_bad_props_is_one_line(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(capsys, "--config", str(config), "--props", "nonsense", "audit")
    assert code != 0
    assert "--props 'nonsense': expected KEY=VALUE" in one_line(err)


@pytest.mark.parametrize("args", [["--help"], ["topics", "--help"], ["audit", "--help"]])
def test_help_exits_0_and_shows_examples(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, err = run(capsys, *args)
    assert code == 0 and err == []
    assert "examples:" in out
    assert "srm-control topics --source primary --target backup --add orders,payments" in out
    assert "srm-control audit --at 2026-11-20T09:30:00Z" in out
    assert "--bootstrap-servers" in out


def test_missing_config_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "absent.yaml"
    code, _out, err = run(capsys, "--config", str(missing), "audit")
    assert code != 0
    line = one_line(err)
    assert str(missing) in line and "cannot read" in line


def test_no_config_anywhere_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SRM_CONFIG", raising=False)
    code, _out, err = run(capsys, "audit")
    assert code != 0
    assert "no configuration found: pass --config FILE or set SRM_CONFIG" in one_line(err)


@pytest.mark.parametrize("option", ["--at", "--since"])
def test_audit_with_a_bad_time_is_one_line(
    config: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    code, _out, err = run(capsys, "--config", str(config), "audit", option, "garbage")
    assert code != 0
    line = one_line(err)
    assert "'garbage' is not a time" in line and "epoch milliseconds" in line


class _Leader(http.server.BaseHTTPRequestHandler):
    """A leader that answers every command with ``reply`` (status, body), or never."""

    reply: tuple[int, dict[str, object]] | None = None

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        if self.reply is None:
            time.sleep(3)  # longer than the client waits
            return
        status, body = self.reply
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: object) -> None:
        pass


def _send_to(reply: tuple[int, dict[str, object]] | None) -> str:
    handler = type("Handler", (_Leader,), {"reply": reply})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    state = replace(ControlState(), leader=Leader("c1", url, 1, 0))
    try:
        with pytest.raises(SystemExit) as exited:
            control_cli._send(state, "/v1/commands/patterns", {})
    finally:
        server.shutdown()
        server.server_close()
    assert exited.value.code == 1
    return url


def test_a_command_the_leader_withdrew_is_its_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    error = "the leader did not get to the command within 20 s; it was withdrawn: try again"
    _send_to((504, {"error": error}))
    assert one_line(capsys.readouterr().err.splitlines()) == f"srm-control: {error}"


def test_no_answer_in_time_says_the_command_may_yet_apply(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(control_cli, "ANSWER_TIMEOUT_S", 0.5)
    url = _send_to(None)
    line = one_line(capsys.readouterr().err.splitlines())
    assert f"the leader at {url} took the command but did not answer" in line
    assert "check with --list or audit" in line
