"""`make up`'s HTTP tokens: made afresh in the run folder, private, handed to each
service by path, and named in the summary without their content."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from srm_common.adapters.http_auth import read_tokens
from srm_local import stack_services, stack_summary

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
flows:
  primary->backup: {enabled: true}
"""


def test_make_up_hands_each_service_its_token_by_path_and_prints_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SRM_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("SRM_DRIVERS", "2")
    config = tmp_path / "srm.yaml"
    config.write_text(CONFIG)
    services = stack_services.stack_services(config, {})
    folder = tmp_path / "run" / "http"
    tokens = read_tokens(folder / "tokens")
    secrets = {p.name: p.read_text().strip() for p in folder.glob("*.token")}
    assert set(secrets) == {
        "srm-control.token",
        "api-gateway.token",
        "driver-driver-1.token",
        "driver-driver-2.token",
    }
    assert tokens.principal(secrets["driver-driver-2.token"]) == "driver:driver-2"
    assert tokens.principal(secrets["srm-control.token"]) == "srm-control"
    for path in [folder, *folder.iterdir()]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, f"{path} is readable by others"
    for service in services:
        command = " ".join(service.command)
        assert f"srm.http.tokens.file={folder / 'tokens'}" in command, service.name
        assert not any(token in command for token in secrets.values()), service.name
    by_name = {s.name: " ".join(s.command) for s in services}
    assert f"--token-file {folder / 'driver-driver-1.token'}" in by_name["driver-1"]
    assert f"--token-file {folder / 'api-gateway.token'}" in by_name["gateway"]
    lines = "\n".join(stack_summary.token_lines(services))
    assert str(folder / "srm-control.token") in lines
    assert not any(token in lines for token in secrets.values())
