"""The ACL sync job of a flow: where it runs, what its status says, and that a cluster
without an authorizer or a principal without rights is said once and stops nothing
(fakes; the copy against real clusters is tests/integration/test_acl_sync.py)."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException
from srm_common.config import parse_yaml_text
from srm_common.domain.acls import AclBinding
from srm_common.domain.tasks import SourceTask
from srm_driver.acl_sync import AclRound, AclSync, AclSyncJob, AclSyncProblem, from_kafka, to_kafka
from srm_driver.runtime import DriverRuntime
from srm_driver.tasks import Assignment
from srm_driver.testing import IdleCopy, QuietSource

FLOW = "primary->backup"


def config(extra: str = "") -> object:
    return parse_yaml_text(
        "clusters:\n  primary: {bootstrap.servers: 'p:9'}\n  backup: {bootstrap.servers: 'b:9'}\n"
        f"flows:\n  primary->backup: {{enabled: true{extra}}}\n"
    )


def flow(extra: str = ""):  # noqa: ANN201 - a FlowConfig
    return config(extra).flow("primary", "backup")  # type: ignore[attr-defined]


class Rounds:
    """Stands in for AclSync: raises or returns what it is given, in order."""

    def __init__(self, *outcomes: object) -> None:
        self.outcomes = list(outcomes)

    def run_once(self) -> AclRound:
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        assert isinstance(outcome, AclRound)
        return outcome


READ = AclBinding("TOPIC", "primary.orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")


def test_no_authorizer_is_said_once_and_the_status_says_it_every_round(
    caplog: pytest.LogCaptureFixture,
) -> None:
    problem = AclSyncProblem("no-authorizer", "cluster 'primary' has no authorizer; set ...")
    job = AclSyncJob(flow(), threading.Event(), Rounds(problem, problem, problem))  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            job.round()
    warned = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1, "said once, not every interval"
    assert "replication goes on without it" in warned[0].getMessage()
    assert job.status.state == "no-authorizer" and "no authorizer" in str(job.status.problem)


def test_a_round_that_works_after_a_problem_clears_it_and_counts_what_it_created(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refused = AclSyncProblem("not-authorized", "our principal lacks DESCRIBE on the cluster")
    done = AclRound(source_acls=4, wanted=(READ,), created=(READ,), skipped=3)
    job = AclSyncJob(flow(), threading.Event(), Rounds(refused, done, refused))  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO):
        job.round()
        job.round()
        assert job.status.as_dict() | {"last_round_ms": None} == {
            "state": "ok",
            "last_round_ms": None,
            "source_acls": 4,
            "copied": 1,
            "created": 1,
            "created_total": 1,
            "created_last": [READ.describe()],
            "skipped": 3,
            "problem": None,
        }
        job.round()
    warned = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 2, "a problem that comes back after a good round is said again"


def test_a_cluster_that_does_not_answer_is_an_error_each_round(
    caplog: pytest.LogCaptureFixture,
) -> None:
    away = AclSyncProblem("failing", "cannot list the topic ACLs of 'primary': timed out")
    job = AclSyncJob(flow(), threading.Event(), Rounds(away, away))  # type: ignore[arg-type]
    job.round()
    job.round()
    assert sum(r.levelname == "ERROR" for r in caplog.records) == 2
    assert job.status.state == "failing"


class RefusingAdmin:
    """An admin whose DescribeAcls fails with ``code`` (as librdkafka reports it)."""

    def __init__(self, code: int) -> None:
        self.code = code

    def describe_acls(self, _filter: object, request_timeout: float) -> Future[object]:
        future: Future[object] = Future()
        future.set_exception(KafkaException(KafkaError(self.code)))
        return future


@pytest.mark.parametrize(
    ("code", "state", "fix"),
    [
        (KafkaError.SECURITY_DISABLED, "no-authorizer", "sync.topic.acls.enabled = false"),
        (
            KafkaError.CLUSTER_AUTHORIZATION_FAILED,
            "not-authorized",
            "lacks DESCRIBE on the cluster",
        ),
        (KafkaError._TRANSPORT, "failing", "is it reachable?"),
    ],
)
def test_each_refusal_of_the_source_names_the_cluster_and_the_fix(
    code: int, state: str, fix: str
) -> None:
    sync = AclSync(flow(), RefusingAdmin(code), RefusingAdmin(code), timeout=1)  # type: ignore[arg-type]
    with pytest.raises(AclSyncProblem) as caught:
        sync.run_once()
    assert caught.value.state == state
    assert "'primary'" in str(caught.value) and fix in str(caught.value)


class FlowTopics:
    def ready(self, owned: frozenset[tuple[str, int]]) -> dict[tuple[str, int], str]:
        return {}


class Idle(AclSyncJob):
    def run(self) -> None:
        while not self.done():
            self.pause(0.05)


def runtime(started: list[object]) -> DriverRuntime:
    def job(f: object, stop: threading.Event) -> AclSyncJob:
        started.append(f)
        return Idle(f, stop, Rounds())  # type: ignore[arg-type]

    return DriverRuntime(
        source=QuietSource(),  # type: ignore[arg-type]
        copy=IdleCopy(),  # type: ignore[arg-type]
        flow_topics=lambda flow: FlowTopics(),  # type: ignore[arg-type,return-value]
        heartbeat=lambda flow, stop: None,  # type: ignore[arg-type,return-value]
        checkpoints=lambda *_: None,  # type: ignore[arg-type,return-value]
        acl_sync=job,  # type: ignore[arg-type]
    )


def assignment(generation: int, indexes: tuple[int, ...], extra: str = "") -> Assignment:
    tasks = tuple(SourceTask(FLOW, i, (("orders", i),)) for i in indexes)
    return Assignment(generation=generation, flows={FLOW: flow(extra)}, source={FLOW: tasks})


def test_the_job_runs_where_the_first_source_task_is_and_moves_with_it() -> None:
    started: list[object] = []
    r = runtime(started)
    try:
        r._apply(assignment(1, (1,)))  # noqa: SLF001 - one pass of the loop
        assert r.acl_syncs == {}, "source task 0 runs on another driver"
        r._apply(assignment(2, (0, 1)))  # noqa: SLF001
        assert set(r.acl_syncs) == {FLOW}
        r._apply(assignment(3, (0, 1)))  # noqa: SLF001
        assert len(started) == 1, "an unchanged flow keeps its job"
        r._apply(assignment(4, (0,), ", sync.topic.acls.interval.seconds: 5"))  # noqa: SLF001
        assert len(started) == 2 and r.acl_syncs[FLOW].flow.sync_topic_acls_interval_seconds == 5
        r._apply(assignment(5, (1,)))  # noqa: SLF001
        assert r.acl_syncs == {}, "the job left with source task 0"
    finally:
        r.shutdown(1)


def test_no_job_when_acl_sync_is_switched_off() -> None:
    r = runtime([])
    try:
        r._apply(assignment(1, (0,), ", sync.topic.acls.enabled: false"))  # noqa: SLF001
        assert r.acl_syncs == {}
    finally:
        r.shutdown(1)


@pytest.mark.parametrize(
    "binding",
    [
        READ,
        AclBinding(
            "CLUSTER", "kafka-cluster", "LITERAL", "User:a", "*", "IDEMPOTENT_WRITE", "ALLOW"
        ),
        AclBinding(
            "TRANSACTIONAL_ID", "srm.coordinator", "PREFIXED", "User:a", "*", "WRITE", "DENY"
        ),
    ],
)
def test_bindings_cross_to_confluent_kafka_and_back_unchanged(binding: AclBinding) -> None:
    # librdkafka names Kafka's CLUSTER resource BROKER.
    assert from_kafka(to_kafka(binding)) == binding


class EmptyAdmin:
    """An admin whose DescribeAcls lists nothing, as librdkafka answers a refusal."""

    def describe_acls(self, _filter: object, request_timeout: float) -> Future[object]:
        future: Future[object] = Future()
        future.set_result([])
        return future


@pytest.mark.parametrize(
    ("probed", "state"),
    [
        ((54, "No Authorizer is configured."), "no-authorizer"),
        ((31, ""), "not-authorized"),
        (None, None),
        (OSError("unreachable"), None),
    ],
)
def test_an_empty_listing_is_explained_by_asking_the_broker_again(
    probed: object, state: str | None
) -> None:
    asked: list[float] = []

    def probe(keys: object, timeout: float) -> object:
        asked.append(timeout)
        if isinstance(probed, Exception):
            raise probed
        return probed

    sync = AclSync(flow(), EmptyAdmin(), EmptyAdmin(), timeout=3, probe=probe)  # type: ignore[arg-type]
    if state is None:
        assert sync.run_once() == AclRound(0, (), (), 0), "no ACLs: nothing to do"
    else:
        with pytest.raises(AclSyncProblem) as caught:
            sync.run_once()
        assert caught.value.state == state and "'primary'" in str(caught.value)
    assert asked == [3]


def test_a_binding_the_domain_cannot_model_is_left_out_not_a_crash() -> None:
    from confluent_kafka.admin import AclBinding as KafkaAclBinding
    from confluent_kafka.admin import (
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    odd = KafkaAclBinding(
        ResourceType.TOPIC,
        "orders",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.UNKNOWN,
        AclPermissionType.ALLOW,
    )
    assert from_kafka(odd) is None


@pytest.mark.parametrize("value", ["0", "soon", "-5"])
def test_a_bad_interval_is_one_line_at_load(value: str) -> None:
    from srm_common.errors import ConfigError

    with pytest.raises(ConfigError, match="sync.topic.acls.interval.seconds.*set sync.topic"):
        flow(f", sync.topic.acls.interval.seconds: '{value}'")


def test_a_round_that_raises_something_unexpected_is_failing_and_the_job_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done = AclRound(source_acls=0, wanted=(), created=(), skipped=0)
    job = AclSyncJob(flow(), threading.Event(), Rounds(RuntimeError("boom"), done))  # type: ignore[arg-type]
    job.round()
    assert job.status.state == "failing" and job.status.problem == "boom"
    job.round()
    assert job.status.state == "ok"


def test_the_status_names_at_most_twenty_created_bindings() -> None:
    many = tuple(
        AclBinding("TOPIC", f"primary.t{i:02}", "LITERAL", "User:a", "*", "READ", "ALLOW")
        for i in range(25)
    )
    job = AclSyncJob(flow(), threading.Event(), Rounds(AclRound(25, many, many, 0)))  # type: ignore[arg-type]
    job.round()
    assert job.status.created == 25 and len(job.status.created_last) == 21
    assert job.status.created_last[-1] == "... and 5 more (in the log)"
