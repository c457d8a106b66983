"""Authenticated HTTP on real Kafka: a coordinator, a coordinated driver and the gateway
as processes. Every mutating endpoint each one lists in its OpenAPI refuses an
unauthenticated POST (401) and the state stays as it was; srm-control's command is
applied and its audit entry names the principal, the gateway's names the caller "via
api-gateway"; over an HTTPS listener a client certificate is a principal."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from srm_control import cli as control_cli
from srm_harness.control import ControlGroup, control_config
from srm_harness.processes import ChildProcess, CoordinatorProcess, DriverProcess, log_tails
from srm_harness.waits import wait_until
from srm_local.tls_files import CLIENT_CN, write_tls_files

pytestmark = [pytest.mark.integration]

SAFE = {"get", "head", "options"}


def _config(kafka, tmp_path: Path, prefix: str, **extra: object) -> Path:  # type: ignore[no-untyped-def]
    return control_config(tmp_path, kafka.bootstrap, prefix, **extra)


def _control(config: Path, *args: str, capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = control_cli.main(["--config", str(config), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _post(url: str, body: object, headers: dict[str, str] | None = None, context=None):  # type: ignore[no-untyped-def]
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _mutating(base: str, context=None) -> list[str]:  # type: ignore[no-untyped-def]
    """Every path of the service's OpenAPI with a method other than GET/HEAD/OPTIONS."""
    try:
        with urllib.request.urlopen(f"{base}/openapi.json", timeout=10, context=context) as r:
            spec = json.loads(r.read())
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{base}/openapi.json: {exc.code} {exc.read()[:300]!r}") from None
    return sorted(path for path, methods in spec["paths"].items() if set(methods) - SAFE)


def _concrete(path: str) -> str:
    for name, value in (
        ("{source}", "primary"),
        ("{target}", "backup"),
        ("{topic}", "orders"),
        ("{partition}", "0"),
        ("{job}", "j1"),
        ("{slot}", "0"),
        ("{verb}", "patterns"),
    ):
        path = path.replace(name, value)
    return path


def _say(capsys, line: str) -> None:  # type: ignore[no-untyped-def]
    """Print a figure to the terminal (not into what srm-control's output is read from)."""
    with capsys.disabled():
        print(line)


def _commanded(state):  # type: ignore[no-untyped-def]
    """What commands and driver reports change (assignments move on by themselves)."""
    return (
        state.leader.epoch,
        dict(state.flows),
        dict(state.halts),
        dict(state.resumes),
        dict(state.losses),
        tuple(state.commands),
    )


def _url_in_log(process: ChildProcess, what: str) -> str:
    found: list[str] = []

    def logged() -> bool:
        found[:] = re.findall(r": API at (https?://[^\s)]+)", process.log_text())
        return bool(found)

    wait_until(logged, 60, f"{what} prints its URL", detail=process.log_text)
    return found[-1]


def test_unauthenticated_posts_are_refused_everywhere_and_the_audit_names_principals(  # type: ignore[no-untyped-def]
    kafka, tmp_path, unique_name, capsys, http_tokens
):
    prefix = unique_name("auth")
    config = _config(kafka, tmp_path, prefix)
    group = ControlGroup(config)
    coordinator = CoordinatorProcess(config, tmp_path / "c1.log", "c1", "--projection", "none")
    driver = DriverProcess(config, tmp_path / "d1.log", args=("--id", "d1"))
    gateway = ChildProcess(
        "srm_api_gateway",
        ["--config", str(config), "--port", "0", "--state-dir", str(tmp_path)],
        tmp_path / "gateway.log",
        env={"SRM_TOKEN_FILE": str(http_tokens.token_file("api-gateway"))},
    )
    processes = [coordinator, driver, gateway]
    try:
        coordinator.start()
        wait_until(
            lambda: group.state().leader is not None,
            60,
            "a coordinator leads",
            detail=log_tails(processes),
        )
        driver.start()
        gateway.start()
        wait_until(
            lambda: "d1" in group.state().drivers,
            120,
            "the driver joins",
            detail=log_tails(processes),
        )
        state = group.state()
        urls = {
            "coordinator": state.leader.url,
            "driver": state.drivers["d1"].url,
            "api-gateway": _url_in_log(gateway, "the gateway"),
        }
        code, listed_before, err = _control(
            config, "topics", "--source", "primary", "--target", "backup", "--list", capsys=capsys
        )
        assert code == 0, err
        before = _commanded(state)

        body = {
            "flow": "primary->backup",
            "kind": "topics",
            "action": "add",
            "patterns": [f"{prefix}-evil"],
            "mode": "source-start",
            "topic": "orders",
            "partition": 0,
            "from": "source-start",
            "driver": "d1",
            "reason": "x",
            "kind_": "x",
        }
        statuses: dict[str, dict[str, int]] = {}
        for service, base in urls.items():
            paths = _mutating(base)
            assert paths, f"{service} lists no mutating endpoint in its OpenAPI"
            statuses[service] = {}
            for path in paths:
                status, answer = _post(base + _concrete(path), body)
                statuses[service][path] = status
                assert "error" in answer, (service, path, answer)
            # A token that is no one's is refused as well.
            wrong = {"Authorization": "Bearer not-a-token-of-the-file-0123"}
            assert _post(base + _concrete(paths[0]), body, wrong)[0] == 401
        for service, table in statuses.items():
            for path, status in table.items():
                _say(capsys, f"unauthenticated POST {service:<12} {path:<62} -> {status}")
        assert {s for table in statuses.values() for s in table.values()} == {401}, statuses

        after = _commanded(group.state())
        _say(
            capsys,
            f"leader epoch {before[0]} -> {after[0]}, commands {len(before[-1])} ->"
            f" {len(after[-1])}, lists, halts, resumes, losses identical: {after == before}",
        )
        assert after == before, "a refused POST changed what commands and reports change"
        code, listed_after, err = _control(
            config, "topics", "--source", "primary", "--target", "backup", "--list", capsys=capsys
        )
        # The lists as --list prints them (what matches now moves on as topics appear).
        lists_after = listed_after.split("Replicated now")[0]
        assert lists_after == listed_before.split("Replicated now")[0]
        assert f"{prefix}-evil" not in lists_after

        # srm-control bears its token (SRM_TOKEN_FILE): applied, recorded as its principal.
        code, out, err = _control(
            config,
            "topics",
            "--source",
            "primary",
            "--target",
            "backup",
            "--add",
            f"{prefix}-orders",
            capsys=capsys,
        )
        assert code == 0, err
        # Through the gateway with the same principal's token: relayed on its behalf.
        token = http_tokens.token_file("srm-control").read_text().strip()
        status, answer = _post(
            f"{urls['api-gateway']}/v1/commands/patterns",
            {**body, "patterns": [f"{prefix}-payments"], "by": "ops laptop"},
            {"Authorization": f"Bearer {token}"},
        )
        assert (status, answer.get("outcome")) == (200, "applied"), answer
        code, out, err = _control(config, "audit", "--json", capsys=capsys)
        entries = [e for e in json.loads(out) if prefix in e["change"]]
        for entry in entries:
            _say(capsys, f"audit: {entry['at']}  {entry['change']}  by {entry['by']}")
        by = {e["change"].split(": ")[-1]: e["by"] for e in entries}
        assert by[f"+ {prefix}-orders"].startswith("srm-control [note: ")
        assert by[f"+ {prefix}-payments"] == "srm-control via api-gateway [note: ops laptop]"
    finally:
        for process in processes:
            process.stop(60)


def test_a_client_certificate_is_a_principal_on_an_https_listener(  # type: ignore[no-untyped-def]
    kafka, tmp_path, unique_name, capsys, monkeypatch
):
    """The coordinator listens on HTTPS (PKCS#12 keystore, CA truststore as JKS,
    ssl.client.auth=requested): srm-control with a client certificate and no token is
    recorded as the certificate's CN; without either, 401."""
    tls = write_tls_files(tmp_path / "tls", "store-password")
    client = tmp_path / "client-with-key.pem"
    client.write_text(tls.client_pem.read_text() + tls.client_key.read_text())
    prefix = unique_name("mtls")
    config = _config(
        kafka,
        tmp_path,
        prefix,
        **{
            "listeners": "https://127.0.0.1:0",
            "listeners.https.ssl.keystore.location": str(tls.broker_keystore),
            "listeners.https.ssl.keystore.password": tls.password,
            "listeners.https.ssl.truststore.location": str(tls.truststore_jks),
            "listeners.https.ssl.truststore.password": tls.password,
            "listeners.https.ssl.client.auth": "requested",
        },
    )
    group = ControlGroup(config)
    coordinator = CoordinatorProcess(config, tmp_path / "c1.log", "c1", "--projection", "none")
    try:
        coordinator.start()
        wait_until(
            lambda: group.state().leader is not None,
            60,
            "a coordinator leads",
            detail=coordinator.log_text,
        )
        url = group.state().leader.url
        assert url.startswith("https://"), url
        import ssl

        context = ssl.create_default_context(cafile=str(tls.ca_pem))
        status, answer = _post(
            f"{url}/v1/commands/patterns",
            {"flow": "primary->backup", "kind": "topics", "action": "add", "patterns": ["x"]},
            context=context,
        )
        _say(capsys, f"unauthenticated POST over HTTPS -> {status}: {answer['error']}")
        assert status == 401

        monkeypatch.delenv("SRM_TOKEN_FILE", raising=False)
        monkeypatch.setenv("SRM_RUN_DIR", str(tmp_path / "no-run"))
        code, out, err = _control(
            config,
            "topics",
            "--source",
            "primary",
            "--target",
            "backup",
            "--add",
            f"{prefix}-orders",
            "--cert-file",
            str(client),
            "--ca-file",
            str(tls.ca_pem),
            capsys=capsys,
        )
        assert code == 0, err
        code, out, err = _control(config, "audit", "--json", capsys=capsys)
        (entry,) = [e for e in json.loads(out) if f"{prefix}-orders" in e["change"]]
        _say(capsys, f"audit over mutual TLS: {entry['change']}  by {entry['by']}")
        assert entry["by"].startswith(f"{CLIENT_CN} [note: ")
        # Trusting another CA, srm-control does not trust the listener: not applied.
        code, out, err = _control(
            config,
            "topics",
            "--source",
            "primary",
            "--target",
            "backup",
            "--add",
            f"{prefix}-other",
            "--cert-file",
            str(client),
            "--ca-file",
            str(tls.stranger_ca_pem),
            "--timeout",
            "3",
            capsys=capsys,
        )
        _say(capsys, f"srm-control trusting another CA: exit {code}: {err.strip()}")
        assert code == 1 and "TLS: " in err and "Traceback" not in err
    finally:
        coordinator.stop(60)
