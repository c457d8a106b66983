"""The pure parts of `make test-containers` (deploy/images/compose_run.py, the plumbing of
compose_check.py): no Docker. The script imports its modules by file name (a script's
folder is on its path); the last test runs it as make does, for --help."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[1] / "compose_run.py"
_spec = importlib.util.spec_from_file_location("srm_compose_run", _PATH)
assert _spec is not None and _spec.loader is not None
check = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = check  # dataclasses look their module up there
_spec.loader.exec_module(check)


def test_free_ports_are_distinct_bindable_and_never_make_ups() -> None:
    ports = check.free_ports(3)
    assert len(set(ports)) == 3
    assert not set(ports) & {9092, 9192, 8080}
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_free_ports_skip_what_they_must_avoid() -> None:
    taken = check.free_ports(1)[0]
    # The system may offer the same port again; it is never returned.
    assert taken not in check.free_ports(5, avoid={taken})


def test_the_makefiles_compose_choice_wins_else_what_is_installed(monkeypatch) -> None:
    assert check.compose_command({"SRM_COMPOSE": "docker compose"}) == ["docker", "compose"]
    monkeypatch.setattr(check.shutil, "which", lambda name: "/usr/bin/docker-compose")
    assert check.compose_command({}) == ["docker-compose"]
    monkeypatch.setattr(check.shutil, "which", lambda name: None)
    assert check.compose_command({"SRM_COMPOSE": " "}) == ["docker", "compose"]


def test_the_report_has_a_line_per_step_and_the_total() -> None:
    text = check.report(
        [
            check.StepFigures("up, 1 driver(s) in the group", 40.0),
            check.StepFigures("1 -> 3 drivers under load", 61.5, 90000, 90000, 0, 0),
        ]
    )
    lines = text.splitlines()
    assert lines[0].split() == ["step", "time", "produced", "found", "missing", "duplicated"]
    assert lines[1].split()[-2:] == ["40.0", "s"]
    assert lines[2].split()[-6:] == ["61.5", "s", "90000", "90000", "0", "0"]
    assert lines[3].split() == ["total", "101.5", "s"]


def test_the_script_finds_its_modules_when_run_as_make_runs_it() -> None:
    done = subprocess.run(
        [sys.executable, str(_PATH.with_name("compose_check.py")), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "--scale" in done.stdout
