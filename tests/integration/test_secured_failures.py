"""Every service and srm-control, refused by a secured cluster: one line, no traceback.

Both clusters are secured (:mod:`srm_local.secured`); the configuration an operator
wrote has a wrong password for ``primary``, or trusts a CA that did not sign its
certificate.
Each command is run as a process, as an operator starts it (the five side by side), and
given up to a minute: it must stop with a non-zero code and say what is wrong in one
line naming the cluster, without the password and without a traceback; srm-driver and
srm-control, what an operator runs first, with exit code 2 and the cause in words.
"""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from srm_local.secured import Credential, write_mm2_properties

pytestmark = pytest.mark.integration

WRONG = "Wr0ng-but-distinctive-pw"
# The commands an operator runs first, whose line is checked word for word.
WORDED = ("srm-driver", "srm-control")
CAUSE = {"wrong password": "authentication failed", "untrusted CA": "certificate verify failed"}
BIN = Path(sys.executable).parent


def _run(command: list[str], folder: Path, timeout: float = 60) -> tuple[int | None, str, float]:
    """Exit code (None: still running after ``timeout``, then stopped), output, seconds."""
    started = time.monotonic()
    with (folder / f"{Path(command[0]).name}.out").open("w+b") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=folder
        )
        try:
            code: int | None = process.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
            process.kill()
            process.wait(30)
        out.seek(0)
        return code, out.read().decode(errors="replace"), time.monotonic() - started


@pytest.mark.parametrize("fault", ["wrong password", "untrusted CA"])
def test_each_command_stops_with_one_line(kafka_secured, tmp_path, unique_name, fault):  # type: ignore[no-untyped-def]
    # The fault is on primary: a flow's source, the cluster whose log srm-control reads
    # for the flow into it (backup->primary), and the cluster whose raw metrics the
    # aggregator folds here; backup is configured right.
    primary, backup = kafka_secured["primary"], kafka_secured["backup"]
    if fault == "wrong password":
        bad = primary.mm2_keys(Credential(primary.admin.username, WRONG))
    else:
        bad = {
            **primary.mm2_keys(primary.admin),
            "ssl.truststore.location": str(primary.tls.stranger_truststore_jks),
        }
    keys = {"primary": bad, "backup": backup.mm2_keys(backup.admin)}
    config = str(
        write_mm2_properties(
            tmp_path / "srm.properties",
            keys,
            {
                "primary->backup.enabled": True,
                "primary->backup.topics": unique_name("none"),
                "srm.control.topic.prefix": unique_name("bad"),
            },
        )
    )
    commands = {
        "srm-driver": [str(BIN / "srm-driver"), "--config", config, "--standalone"],
        "srm-coordinator": [str(BIN / "srm-coordinator"), "--config", config, "--id", "c1"],
        "srm-control": [
            *(str(BIN / "srm-control"), "--config", config),
            *("topics", "--source", "backup", "--target", "primary", "--list"),
        ],
        "srm-metrics-aggregator": [
            *(str(BIN / "srm-metrics-aggregator"), "--config", config),
            *("--cluster", "primary", "--data-dir", str(tmp_path / "faust")),
        ],
        "srm-api-gateway": [
            *(str(BIN / "srm-api-gateway"), "--config", config, "--port", "0"),
            *("--db-url", f"sqlite:///{tmp_path / 'gateway.db'}"),
        ],
    }
    # All five at once: each waits for its cluster's refusal, none for another's.
    with ThreadPoolExecutor(len(commands)) as pool:
        futures = {name: pool.submit(_run, command, tmp_path) for name, command in commands.items()}
        runs = {name: future.result() for name, future in futures.items()}
    failures = []
    print()
    for name, (code, output, seconds) in runs.items():
        lines = [line for line in output.splitlines() if line.strip()]
        shown = lines[0] if len(lines) == 1 else f"{len(lines)} lines, last: {lines[-1:]}"
        print(f"{fault}: {name}: exit {code} after {seconds:.1f} s: {shown}")
        if code in (None, 0) or len(lines) != 1 or "Traceback" in output or WRONG in output:
            tail = "\n".join(line[:300] for line in lines[-12:])
            failures.append(f"{name}: exit {code}, {len(lines)} lines, the last:\n{tail}")
        elif "primary" not in lines[0]:
            failures.append(f"{name}: the line names no cluster: {lines[0]}")
        elif name in WORDED and not _worded(name, fault, code, lines[0], primary.admin.username):
            failures.append(f"{name}: exit {code}, not the wording an operator acts on: {lines[0]}")
    assert not failures, "\n\n".join(failures)


def _worded(name: str, fault: str, code: int | None, line: str, user: str) -> bool:
    """Exit 2, the command and the cluster first, the cause; a refused login names its
    user (not masked, unlike the password)."""
    named = fault != "wrong password" or f"login as '{user}'" in line
    return (
        code == 2
        and line.startswith(f"{name}: cluster 'primary'")
        and CAUSE[fault] in line
        and named
    )
