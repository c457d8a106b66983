"""srm-control's answers to bad input (one line on stderr, a non-zero exit, no Kafka), and
how it delivers a command: across leader changes and lost answers, truthfully.

The configuration points at 127.0.0.1:9 (discard), and every case here fails before
the event log is read, so nothing connects; leaders are fakes on local ports.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Literal

import pytest
from srm_common import telemetry
from srm_common.config import load_config
from srm_common.config.control import control_plane
from srm_common.control.state import ControlState
from srm_common.control.state_records import Leader
from srm_common.testing import Clock
from srm_control import arguments, sending
from srm_control.cli import main
from srm_control.delivery import (
    NO_ANSWER,
    NOT_SENT,
    Applied,
    Delivery,
    NotApplied,
    Post,
    Unknown,
    post_json,
)

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
    assert "exit status: 0 applied" in out and "3 unknown" in out


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


# -- delivering a command: leader changes, lost answers, the deadline ---------------------


Reply = tuple[int, dict[str, object]] | Literal["apply, then drop the connection"]


class FakeLeader:
    """A coordinator on a real port answering from ``replies`` (the last one repeats).
    Like the real leader it remembers the ids it applied and answers a retry "already
    applied"; ``bodies`` are the requests it got."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, object]] = []
        self.applied: list[str] = []
        leader = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                leader.bodies.append(body)
                reply = leader.replies.pop(0) if len(leader.replies) > 1 else leader.replies[0]
                if body.get("request_id") in leader.applied:
                    reply = (200, {"outcome": "already applied", "changes": []})
                if reply == "apply, then drop the connection":
                    leader.applied.append(str(body["request_id"]))
                    self.close_connection = True
                    return  # no status line: the client sees the connection closed
                status, answer = reply
                if status == 200 and answer.get("outcome") == "applied":
                    leader.applied.append(str(body["request_id"]))
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def leaders() -> Iterator[list[FakeLeader]]:
    started: list[FakeLeader] = []
    yield started
    for leader in started:
        leader.close()


APPLIED: Reply = (200, {"outcome": "applied", "changes": ["topics allowlist of a->b: + x"]})
STANDBY: Reply = (503, {"error": "this coordinator is a standby", "leader": None})
BODY = {"flow": "primary->backup", "patterns": ["x"], "request_id": "r-7"}


def delivery(
    clock: Clock,
    log_leader: Callable[[], str | None] = lambda: None,
    in_log: list[str] | None = None,
    post: Post = post_json,
) -> Delivery:
    return Delivery(
        post=post,
        leader_url=lambda _wait: log_leader(),
        applied_in_log=lambda _id, _wait: in_log,
        clock=clock,
        sleep=clock.sleep,
    )


def test_a_command_follows_a_leader_change(leaders: list[FakeLeader]) -> None:
    """The leader srm-control read from the log stepped down; the log names the next."""
    old, new = FakeLeader(STANDBY), FakeLeader(APPLIED)
    leaders += [old, new]
    clock = Clock(100_000)
    outcome = delivery(clock, lambda: new.url).send(old.url, "/v1/c", BODY, 30)
    assert isinstance(outcome, Applied)
    assert outcome.changes == ("topics allowlist of a->b: + x",)
    assert [b["request_id"] for b in old.bodies + new.bodies] == ["r-7", "r-7"]
    assert new.applied == ["r-7"]


def test_a_dead_leader_is_waited_out_until_the_log_names_the_next(
    leaders: list[FakeLeader],
) -> None:
    dead = FakeLeader(APPLIED)
    dead.close()  # its port refuses connections now
    new = FakeLeader(APPLIED)
    leaders.append(new)
    clock = Clock(100_000)
    named = iter([dead.url, dead.url, new.url])  # the take-over takes a moment
    outcome = delivery(clock, lambda: next(named)).send(dead.url, "/v1/c", BODY, 30)
    assert isinstance(outcome, Applied) and new.applied == ["r-7"]
    assert clock.slept == [0.2, 0.4, 0.8]


def test_a_standby_naming_the_leader_is_followed_at_once(leaders: list[FakeLeader]) -> None:
    new = FakeLeader(APPLIED)
    standby = FakeLeader((503, {"error": "this coordinator is a standby", "leader": new.url}))
    leaders += [new, standby]
    clock = Clock(100_000)
    outcome = delivery(clock).send(standby.url, "/v1/c", BODY, 30)
    assert isinstance(outcome, Applied) and clock.slept == []


def test_an_answer_lost_after_the_command_was_applied_is_resent_and_applied_once(
    leaders: list[FakeLeader],
) -> None:
    leader = FakeLeader("apply, then drop the connection", APPLIED)
    leaders.append(leader)
    clock = Clock(100_000)
    outcome = delivery(clock, lambda: leader.url).send(leader.url, "/v1/c", BODY, 30)
    assert isinstance(outcome, Applied)
    assert outcome.answer["outcome"] == "already applied"
    assert leader.applied == ["r-7"] and len(leader.bodies) == 2


def test_a_refusal_after_a_lost_answer_settles_it() -> None:
    """The leader looks the id up before deciding: its refusal means not applied."""
    replies = iter([(NO_ANSWER, {}), (400, {"error": "'x' is not in the topics allowlist"})])
    outcome = delivery(Clock(100_000), post=lambda *_: next(replies)).send(
        "http://c1", "/", BODY, 30
    )
    assert outcome == NotApplied("'x' is not in the topics allowlist")


@pytest.mark.parametrize(
    ("in_log", "expected"),
    [
        (
            ["topics allowlist of a->b: + x"],
            Applied({"outcome": "applied"}, ("topics allowlist of a->b: + x",)),
        ),
        ([], Unknown),
        (None, Unknown),
    ],
    ids=["in the log", "not in the log", "log unreadable"],
)
def test_no_answer_until_the_deadline_asks_the_log(
    in_log: list[str] | None, expected: object
) -> None:
    clock = Clock(100_000)
    sent: list[str] = []

    def post(url: str, _body: object, _wait: float) -> tuple[int, dict[str, object]]:
        sent.append(url)
        return NO_ANSWER, {}

    outcome = delivery(clock, in_log=in_log, post=post).send("http://c1", "/c", BODY, 10)
    assert clock.now <= 110.0 and len(sent) > 3
    if isinstance(expected, Applied):
        assert outcome == expected
    else:
        assert isinstance(outcome, Unknown)
        assert "took the command but gave no answer" in outcome.reason
        assert "check with --list" in outcome.reason
        assert ("cannot be read" in outcome.reason) == (in_log is None)


@pytest.mark.parametrize(
    ("reply", "settled"),
    [
        ((NOT_SENT, {}), NotApplied),
        (STANDBY, NotApplied),
        ((504, {"error": "withdrawn and not applied", "outcome": "not applied"}), NotApplied),
        ((504, {"error": "still writing", "outcome": "unknown"}), Unknown),
        ((503, {"error": "stopped leading while writing", "outcome": "unknown"}), Unknown),
        ((504, {"error": "may yet be applied"}), Unknown),
        ((500, {}), Unknown),
    ],
    ids=["not sent", "standby", "withdrawn", "still writing", "lost the log", "504", "500"],
)
def test_at_the_deadline_not_applied_is_said_only_when_nothing_may_have_applied(
    reply: tuple[int, dict[str, object]], settled: type
) -> None:
    clock = Clock(100_000)
    outcome = delivery(clock, in_log=[], post=lambda *_: reply).send("http://c1", "/", BODY, 5)
    assert isinstance(outcome, settled)
    if isinstance(outcome, NotApplied):
        assert outcome.reason.endswith("gave up after --timeout 5 s")


def test_no_answer_in_time_is_told_as_no_answer(leaders: list[FakeLeader]) -> None:
    class Silent(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(2)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Silent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert post_json(url, BODY, 0.3) == (NO_ANSWER, {})
    finally:
        server.shutdown()
        server.server_close()
    closed = FakeLeader(APPLIED)
    closed.close()
    assert post_json(closed.url, BODY, 1) == (NOT_SENT, {})


@pytest.mark.parametrize(
    ("reply", "code", "start"),
    [
        ((400, {"error": "'x' is not in the topics allowlist"}), 1, "not applied: 'x' is not"),
        ((NO_ANSWER, {}), 3, "unknown: the leader at"),
    ],
)
def test_send_exits_1_when_not_applied_and_3_when_unknown(
    config: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reply: tuple[int, dict[str, object]],
    code: int,
    start: str,
) -> None:
    monkeypatch.setattr(sending, "post_json", lambda *_: reply)
    monkeypatch.setattr(sending, "leader_url", lambda *_: None)
    monkeypatch.setattr(sending, "applied_in_log", lambda *_: [])
    state = replace(ControlState(), leader=Leader("c1", "http://c1:1", 1, 0))
    settings = control_plane(load_config(config)).log("backup")
    with pytest.raises(SystemExit) as exited:
        sending.Sender().send(state, settings, "/v1/commands/patterns", dict(BODY), 0.5)
    assert exited.value.code == code
    assert one_line(capsys.readouterr().err.splitlines()).startswith(f"srm-control: {start}")


def test_a_command_sent_in_a_span_carries_its_traceparent_when_posted() -> None:
    seen: list[str | None] = []

    class Recording(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(self.headers.get("traceparent"))
            data = json.dumps({"outcome": "applied", "changes": []}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recording)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with telemetry.span("srm-control topics --add"):
            trace_id = telemetry.trace_id_now()
            assert post_json(url, BODY, 5)[0] == 200
        assert post_json(url, BODY, 5)[0] == 200  # outside any span: no header
    finally:
        server.shutdown()
        server.server_close()
    assert seen[0] is not None and seen[0].split("-")[1] == trace_id
    assert seen[1] is None


def test_no_subcommand_option_is_taken_for_an_abbreviated_client_option() -> None:
    """The client options are picked out of the whole line first; failover's --to once
    became --token-file there, and --to was then missing."""
    argv = ["failover", "--group", "g", "--from", "primary", "--to", "backup"]
    options, rest = arguments.client_options().parse_known_args(argv)
    args = arguments.parser().parse_args(rest, namespace=options)
    assert (args.to, args.token_file) == ("backup", None)
