"""The gateway's HTTP API on a real server over a fake event log: answers, 4xx with the
parameter named for bad input, readiness, and schemathesis against its own OpenAPI spec
(no input gives a 5xx)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from srm_api_gateway.testing import get, served
from srm_common.config.model import SrmConfig


@pytest.fixture
def gateway(config: SrmConfig) -> Iterator[str]:
    with served(config) as url:
        yield url


def test_v2_replications_and_topics(gateway: str) -> None:
    status, body = get(f"{gateway}/v2/replications?target=backup")
    assert status == 200 and [r["status"] for r in body["replications"]] == ["halted"]
    status, body = get(f"{gateway}/v2/replications/primary/backup/topics")
    assert status == 200 and [t["remote_topic"] for t in body["topics"]] == [
        "primary.orders",
        "primary.payments",
    ]
    status, body = get(f"{gateway}/v2/cluster-info/primary")
    assert status == 200 and body["replicating_to"] == ["backup"]


def test_unknown_names_are_404_and_bad_parameters_400_naming_them(gateway: str) -> None:
    status, body = get(f"{gateway}/v2/replications/primary/east")
    assert status == 404 and "unknown cluster alias 'east'" in body["error"]
    status, body = get(f"{gateway}/v1/state?at=yesterday")
    assert status == 400 and body["error"].startswith("bad request: at: 'yesterday' is not a time")
    status, body = get(f"{gateway}/v1/audit?limit=0")
    assert status == 400 and "limit" in body["error"]


def test_audit_and_the_state_at_a_time(gateway: str) -> None:
    status, body = get(f"{gateway}/v1/audit")
    assert status == 200 and [c["type"] for c in body["changes"]] == [
        "log.started",
        "flow.enabled",
        "topics.allowed",
        "partition.halted",
    ]
    assert {c["log"] for c in body["changes"]} == {"backup"}, "each entry names its log"
    status, body = get(f"{gateway}/v1/audit?all=true&flow=primary-%3Ebackup")
    assert status == 200 and body["total"] == 4, "the flow's events, task configs included"
    status, body = get(f"{gateway}/v1/state?at=1700000001500")
    assert status == 200 and body["logs"]["backup"]["offset"] == 1 and body["state"]["flows"]
    assert body["logs"]["primary"]["offset"] == -1, "primary's log is empty"


def test_ready_once_the_log_is_read(gateway: str) -> None:
    assert get(f"{gateway}/readyz") == (
        200,
        {"status": "ready", "offsets": {"backup": 6, "primary": -1}},
    )
    assert get(f"{gateway}/healthz") == (200, {"status": "ok"})


def test_no_input_makes_the_gateway_answer_5xx(gateway: str) -> None:
    """schemathesis generates requests from the gateway's own OpenAPI spec."""
    import schemathesis
    from hypothesis import HealthCheck, given, settings

    schema = schemathesis.openapi.from_url(f"{gateway}/openapi.json")
    checked: list[int] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
        def check(case) -> None:  # type: ignore[no-untyped-def]
            response = case.call(base_url=gateway)
            checked.append(response.status_code)
            assert response.status_code < 500, f"{case.method} {case.path}: {response.text}"

        check()
    assert checked and max(checked) < 500
    print(f"\nschemathesis: {len(checked)} requests, status codes {sorted(set(checked))}")
