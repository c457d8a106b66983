"""`make down` and the services' guard: nothing of the stack outlives its launcher or
`make down`, and what survives is named."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from srm_local import stopping
from srm_local.guard import guarded

SLEEPER = "import time; time.sleep(600)"


def _gone(pid: int, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not stopping.group_members(pid) and not stopping._alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_guarded_service_gets_sigterm_when_its_launcher_is_killed() -> None:
    # A launcher that starts one guarded service, prints its pid, then waits.
    launcher_code = (
        "import os, subprocess, sys, time\n"
        "from srm_local.guard import guarded\n"
        f"child = subprocess.Popen(guarded(os.getpid(), [sys.executable, '-c', {SLEEPER!r}]),"
        " start_new_session=True)\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    launcher = subprocess.Popen(
        [sys.executable, "-c", launcher_code], stdout=subprocess.PIPE, text=True
    )
    assert launcher.stdout is not None
    service = int(launcher.stdout.readline())
    deadline = time.monotonic() + 30
    while SLEEPER not in stopping.command_line(service) and time.monotonic() < deadline:
        time.sleep(0.05)  # until the guard has become the service
    assert SLEEPER in stopping.command_line(service)
    launcher.kill()  # SIGKILL: the launcher cannot stop anything itself
    launcher.wait()
    assert _gone(service), f"service {service} outlived its launcher"


def test_guard_refuses_to_start_when_its_launcher_is_not_its_parent() -> None:
    result = subprocess.run(
        guarded(1, [sys.executable, "-c", "print('started')"]), capture_output=True, text=True
    )
    assert result.returncode == 1 and "started" not in result.stdout
    assert "launcher 1 has ended; not starting" in result.stderr


def test_port_holder_names_the_process_listening(tmp_path: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        holder = stopping.port_holder(port)
        assert holder is not None and holder.startswith(f"pid {os.getpid()} ("), holder
    assert stopping.port_holder(port) is None


def _record(folder: Path, name: str, pid: int, port: int | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.pid").write_text(json.dumps({"pid": pid, "port": port, "command": []}))


def test_down_stops_services_its_launcher_left_and_removes_their_pid_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SRM_RUN_DIR", str(tmp_path))
    orphan = subprocess.Popen([sys.executable, "-c", SLEEPER], start_new_session=True)
    _record(tmp_path / "services", "gateway", orphan.pid, None)
    assert stopping.down() == 0
    out = capsys.readouterr().out
    assert "stopping services the launcher left: gateway" in out, out
    assert "make down: nothing of the stack is running" in out, out
    assert orphan.wait(5) == -signal.SIGTERM
    assert not list((tmp_path / "services").glob("*.pid"))


def test_down_exits_1_naming_a_port_of_the_stack_still_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SRM_RUN_DIR", str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    gone.wait()
    with socket.socket() as squatter:  # something else holds the gateway's port
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        _record(tmp_path / "services", "gateway", gone.pid, port)
        assert stopping.down() == 1
    out = capsys.readouterr().out
    assert f"port {port} (gateway) is held by pid {os.getpid()} (" in out, out


def test_down_says_nothing_was_running_in_an_empty_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SRM_RUN_DIR", str(tmp_path))
    assert stopping.down() == 0
    assert capsys.readouterr().out.strip() == "nothing was running"


def test_make_up_names_the_process_holding_a_port_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from srm_local import stack
    from srm_local.services import ServiceProcess

    monkeypatch.setenv("SRM_RUN_DIR", str(tmp_path))
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        gateway = ServiceProcess("gateway", "srm_api_gateway", ["--port", str(port)])
        [line] = stack.taken_ports([], [gateway])
    assert f"port {port} (gateway) is held by pid {os.getpid()} (" in line, line
    assert "move the port with SRM_GATEWAY_PORT" in line, line


def test_gateway_with_every_cluster_unreachable_stops_within_its_bound_of_sigterm(
    tmp_path: Path,
) -> None:
    from srm_common.shutdown import SERVICE_STOP_SECONDS

    config = tmp_path / "srm.yaml"
    config.write_text(
        "clusters:\n  primary: {bootstrap.servers: '127.0.0.1:1'}\n"
        "  backup: {bootstrap.servers: '127.0.0.1:2'}\n"
        "flows:\n  primary->backup: {enabled: true}\n"
    )
    log = (tmp_path / "gateway.log").open("wb")
    gateway = subprocess.Popen(
        [sys.executable, "-m", "srm_api_gateway", "--config", str(config), "--port", "0"]
        + ["--state-dir", str(tmp_path)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while "API at" not in (tmp_path / "gateway.log").read_text(errors="replace"):
            assert gateway.poll() is None and time.monotonic() < deadline, "gateway did not start"
            time.sleep(0.2)
        sent = time.monotonic()
        gateway.send_signal(signal.SIGTERM)
        code = gateway.wait(60)  # bounded: a stop that hangs on the clusters fails here
    finally:
        gateway.kill()
    took = time.monotonic() - sent
    print(f"gateway, clusters unreachable: exit {code} {took:.1f} s after SIGTERM")
    assert code in (0, -signal.SIGALRM), code
    assert "stopping; it exits within" in (tmp_path / "gateway.log").read_text()
    assert SERVICE_STOP_SECONDS < 10
