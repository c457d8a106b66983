"""`make test-containers`' checks of the read side: the gateway's PostgreSQL read model
(audit entries, metric windows, history across a gateway restart) and each cluster's
metrics aggregator."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path

from compose_run import AGGREGATED_TOPIC, ROOT, TOPIC, Compose, Run, first_run_end, get_json, poll
from srm_harness.clients import end_offsets


def sql(compose: Compose, query: str) -> str:
    """``query``'s answer from the stack's PostgreSQL (psql over its socket, as postgres)."""
    return compose.run(
        "exec",
        "-T",
        "postgres",
        "psql",
        "-h",
        "/tmp",
        "-U",
        "postgres",
        "-d",
        "srm",
        "-tAc",
        query,
        capture=True,
    ).strip()


def check_read_model(run: Run, compose: Compose, gateway: str) -> None:
    """The gateway projects into PostgreSQL and answers history from it across a restart."""
    ready = get_json(f"{gateway}/readyz")
    model = ready["read_model"]  # type: ignore[index]
    assert model["status"] == "ok", f"/readyz: {ready}"
    assert "@postgres:5432/srm" in model["database"], f"/readyz: {ready}"
    marker = f"ctest-read-model-{os.getpid()}"
    # A command as an operator makes it: through the gateway, bearing srm-control's token.
    token_dir = Path(os.environ.get("SRM_HTTP_DIR", ROOT / ".run" / "compose" / "http"))
    token = (token_dir / "srm-control.token").read_text().strip()
    body = {"flow": "primary->backup", "kind": "topics", "action": "add", "patterns": [marker]}
    request = urllib.request.Request(
        f"{gateway}/v1/commands/patterns",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200, f"the command through the gateway: {response.status}"
    poll(
        lambda: marker in json.dumps(get_json(f"{gateway}/v1/audit")),
        60,
        "the command on the gateway's /v1/audit",
    )
    poll(
        lambda: (
            sql(compose, f"select count(*) from srm_events where summary like '%{marker}%'") == "1"
        ),
        60,
        "the command's row in PostgreSQL's srm_events, once",
    )
    # Closed windows are written once a minute has passed over a window (aggregator).
    windows = poll(
        lambda: int(sql(compose, "select count(*) from srm_metric_windows where level = 'topic'")),
        180,
        "closed topic windows in PostgreSQL's srm_metric_windows",
    )
    events = int(sql(compose, "select count(*) from srm_events"))
    run.say(f"PostgreSQL: {events} rows in srm_events, {windows} closed topic windows")
    compose.run("restart", "gateway")
    run.say("docker-compose restart gateway")
    poll(lambda: get_json(f"{gateway}/healthz"), 120, "the restarted gateway's /healthz")
    series = poll(
        lambda: [
            p
            for p in get_json(
                f"{gateway}/v2/topic-metrics/primary/backup/{TOPIC}/record-count?minutes=120"
            )["series"]  # type: ignore[index]
            if p["closed"]
        ],
        120,
        f"closed windows of {TOPIC} from the restarted gateway",
    )
    trail = poll(
        lambda: get_json(f"{gateway}/v1/audit?all=true&limit=10000"),
        60,
        "the restarted gateway's audit trail",
    )
    total = int(sql(compose, "select count(*) from srm_events"))
    assert marker in json.dumps(trail), "the restarted gateway lost the command's audit entry"
    once = f"select count(*) from srm_events where summary like '%{marker}%'"
    assert sql(compose, once) == "1", "the command's row is not there once after the restart"
    run.say(
        f"restarted gateway: {len(series)} closed windows of {TOPIC}, audit total"
        f" {trail['total']} (srm_events: {total} rows, none twice)"  # type: ignore[index]
    )


def check_aggregators(
    run: Run,
    compose: Compose,
    clusters: dict[str, str],
) -> None:
    """Each cluster's aggregator still runs, never restarted; how much it published is
    reported (its windows are the aggregator's own tests' business)."""
    for alias, bootstrap in clusters.items():
        service = f"metrics-aggregator-{alias}"
        ids = compose.containers(service)
        assert len(ids) == 1, f"{service}: {len(ids)} containers"
        state = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Status}} {{.RestartCount}}", ids[0]],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        if state != ["running", "0"]:
            run.say(f"{service}: state and restarts {state}; how its first run ended:")
            print(first_run_end(ids[0]), flush=True)
        assert state == ["running", "0"], f"{service}: state and restarts {state}"
        published = sum(end_offsets(bootstrap, AGGREGATED_TOPIC).values())
        run.say(f"{service}: running, no restart; {published} records on {AGGREGATED_TOPIC}")
