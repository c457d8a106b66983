"""ACL sync of one flow (``sync.topic.acls.*``): the source's topic ACLs, copied to the
remote topics on the target by MM2's rule (:mod:`srm_common.domain.acls`).

A round: list every topic ACL of the source (``DescribeAcls``), plan the copies, list the
target's topic ACLs, create the missing ones (``CreateAcls``). Nothing is ever deleted on
the target, as in MM2: an ACL removed on the source stays on the remote topic until an
operator removes it. Rounds run at start and every ``sync.topic.acls.interval.seconds``
on a thread of their own (:class:`AclSyncJob`), on the driver that holds the flow's
first source task (one driver per flow; two for a moment during a move, harmless since
creating an existing ACL changes nothing).

When a cluster has no authorizer (``SECURITY_DISABLED``) or refuses our principal
(``CLUSTER_AUTHORIZATION_FAILED``: DescribeAcls and CreateAcls need DESCRIBE and ALTER
on the cluster), the job says so once at WARNING with the fix, shows it in its status
(``no-authorizer`` / ``not-authorized``), tries again each interval quietly, and
replication goes on untouched. Any other failure (a cluster that does not answer) is
``failing`` with the reason, logged each round.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AclBinding as KafkaAclBinding
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from srm_common.config.model import FlowConfig
from srm_common.domain.acls import AclBinding, missing_acls, plan_acl_copy
from srm_common.replication_plan import reason_not_replicated

from srm_driver.acl_probe import describe_acls_error
from srm_driver.kafka_admin import TIMEOUT_S, RecordBudget
from srm_driver.task_thread import TaskThread

log = logging.getLogger(__name__)

_ANY_TOPIC_ACL = AclBindingFilter(
    ResourceType.TOPIC,
    None,
    ResourcePatternType.ANY,
    None,
    None,
    AclOperation.ANY,
    AclPermissionType.ANY,
)
_MAX_LISTED = 5
_MAX_SHOWN = 20  # created bindings named on the REST status; the log has them all


Probe = Callable[[Mapping[str, str], float], "tuple[int, str] | None"]
"""Asks a cluster (its client keys) why DescribeAcls came back empty: (code, message)."""


class AclSyncProblem(Exception):
    """A round could not finish; ``state`` is ``no-authorizer``, ``not-authorized`` or
    ``failing`` and the message says which cluster and what to do."""

    def __init__(self, state: str, message: str) -> None:
        super().__init__(message)
        self.state = state


@dataclass
class AclSyncStatus:
    """The last round, as the flow's REST status shows it."""

    state: str = "starting"  # ok | no-authorizer | not-authorized | failing | starting
    last_round_ms: int | None = None
    source_acls: int = 0
    copied: int = 0  # target bindings the source's ACLs give
    created: int = 0  # of those, created by the last round
    skipped: int = 0
    problem: str | None = None
    created_total: int = 0
    created_last: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "state": self.state,
            "last_round_ms": self.last_round_ms,
            "source_acls": self.source_acls,
            "copied": self.copied,
            "created": self.created,
            "created_total": self.created_total,
            "created_last": list(self.created_last),
            "skipped": self.skipped,
            "problem": self.problem,
        }


@dataclass(frozen=True)
class AclRound:
    """What one round found and did."""

    source_acls: int
    wanted: tuple[AclBinding, ...]
    created: tuple[AclBinding, ...]
    skipped: int


class AclSync:
    """One flow's ACL sync rounds; the admin clients belong to the caller."""

    def __init__(
        self,
        flow: FlowConfig,
        source_admin: AdminClient,
        target_admin: AdminClient,
        *,
        timeout: float = TIMEOUT_S,
        probe: Probe | None = describe_acls_error,
    ) -> None:
        self.flow = flow
        self._probe = probe
        self._policy = flow.replication_policy()
        self._source_admin = source_admin
        self._target_admin = target_admin
        self._timeout = timeout
        self._budget = RecordBudget(flow.admin_max_records)

    def run_once(self) -> AclRound:
        """Copy what is missing; :class:`AclSyncProblem` if a cluster refuses or is away."""
        flow, policy = self.flow, self._policy
        source = self._describe(flow.source, self._source_admin, flow.source_admin)
        plan = plan_acl_copy(
            source,
            reason_not_replicated=lambda topic: reason_not_replicated(flow, policy, topic),
            remote_topic=lambda topic: policy.format_remote_topic(flow.source, topic),
        )
        wanted = plan.wanted
        missing = (
            missing_acls(wanted, self._describe(flow.target, self._target_admin, flow.target_admin))
            if wanted
            else ()
        )
        self._create(missing)
        return AclRound(len(source), wanted, missing, len(plan.skipped))

    def _describe(
        self, alias: str, admin: AdminClient, keys: Mapping[str, str]
    ) -> list[AclBinding]:
        try:
            future = admin.describe_acls(_ANY_TOPIC_ACL, request_timeout=self._timeout)
            found = future.result(self._timeout + 5)
        except KafkaException as exc:
            raise self._problem(alias, "list the topic ACLs of", exc, "DESCRIBE") from exc
        except TimeoutError as exc:
            raise AclSyncProblem(
                "failing", f"cannot list the topic ACLs of {alias!r}: no answer; is it reachable?"
            ) from exc
        if not found:
            self._check_empty(alias, keys)
        return [b for b in (from_kafka(k) for k in found) if b is not None]

    def _check_empty(self, alias: str, keys: Mapping[str, str]) -> None:
        """An empty listing may be a refusal librdkafka hid (:mod:`srm_driver.acl_probe`)."""
        if self._probe is None:
            return
        try:
            refused = self._probe(keys, self._timeout)
        except Exception as exc:  # noqa: BLE001 - the probe only explains; the listing stands
            log.debug("%s: could not ask %r why it lists no ACLs: %s", self.flow.name, alias, exc)
            return
        if refused is not None:
            code, message = refused
            error = KafkaError(code, message or KafkaError(code).str())
            raise self._problem(alias, "list the topic ACLs of", KafkaException(error), "DESCRIBE")

    def _create(self, bindings: Iterable[AclBinding]) -> None:
        requests = [to_kafka(b) for b in bindings]
        if not requests:
            return
        target = self.flow.target
        try:
            # One ACL record each: thousands of bindings go in requests under the limit.
            futures = self._budget.send(
                f"flow {self.flow.name}: create ACLs on {target!r}",
                requests,
                lambda _binding: 1,
                lambda binding: binding,
                lambda chunk: self._target_admin.create_acls(chunk, request_timeout=self._timeout),
                timeout=self._timeout + 5,
            )
        except KafkaException as exc:
            raise self._problem(target, "create ACLs on", exc, "ALTER") from exc
        failures: list[str] = []
        first: KafkaException | None = None
        for request, future in futures.items():
            try:
                future.result(self._timeout + 5)
            except KafkaException as exc:
                first = first or exc
                failures.append(
                    f"{request.name} ({request.principal} {request.operation.name}): {exc}"
                )
            except TimeoutError:
                failures.append(f"{request.name}: no answer")
        if failures:
            if first is not None and _code(first) in _NEEDS_OPERATOR:
                raise self._problem(target, "create ACLs on", first, "ALTER")
            listed = "; ".join(failures[:_MAX_LISTED])
            raise AclSyncProblem(
                "failing", f"could not create {len(failures)} ACLs on {target!r}: {listed}"
            )

    def _problem(self, alias: str, what: str, exc: KafkaException, needed: str) -> AclSyncProblem:
        code = _code(exc)
        flow = self.flow.name
        if code == KafkaError.SECURITY_DISABLED:
            return AclSyncProblem(
                "no-authorizer",
                f"cluster {alias!r} has no authorizer, so there are no ACLs to copy; set"
                f" {flow}.sync.topic.acls.enabled = false to stop trying",
            )
        if code in (KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED):
            return AclSyncProblem(
                "not-authorized",
                f"cannot {what} {alias!r}: our principal lacks {needed} on the cluster; grant"
                f" it (srm-control acls --print lists every ACL SRM needs) or set"
                f" {flow}.sync.topic.acls.enabled = false",
            )
        return AclSyncProblem("failing", f"cannot {what} {alias!r}: {exc}; is it reachable?")


class AclSyncJob(TaskThread):
    """Runs :class:`AclSync` rounds now and every interval until stopped or halted."""

    def __init__(self, flow: FlowConfig, stop: threading.Event, sync: AclSync) -> None:
        super().__init__(f"acl sync {flow.name}", stop)
        self.flow = flow
        self.sync = sync
        self.status = AclSyncStatus()
        self._said: set[str] = set()  # problems already logged at WARNING

    def run(self) -> None:
        while not self.done():
            self.round()
            self.pause(float(self.flow.sync_topic_acls_interval_seconds))

    def round(self) -> None:
        """One round, its outcome in :attr:`status` and the log; never raises."""
        name = self.flow.name
        status = self.status
        status.last_round_ms = int(time.time() * 1000)
        try:
            result = self.sync.run_once()
        except AclSyncProblem as exc:
            status.state, status.problem, status.created = exc.state, str(exc), 0
            if exc.state == "failing":
                log.error("%s: ACL sync: %s (retrying in %d s)", name, exc, self._interval())
            elif exc.state not in self._said:
                self._said.add(exc.state)
                log.warning("%s: ACL sync: %s; replication goes on without it", name, exc)
            return
        except Exception as exc:  # noqa: BLE001 - a bad round must not end the job
            status.state, status.problem, status.created = "failing", str(exc), 0
            log.exception("%s: ACL sync failed: %s", name, exc)
            return
        self._said.clear()
        status.state, status.problem = "ok", None
        status.source_acls, status.copied = result.source_acls, len(result.wanted)
        status.created, status.skipped = len(result.created), result.skipped
        status.created_total += len(result.created)
        shown = [b.describe() for b in result.created[:_MAX_SHOWN]]
        if len(result.created) > _MAX_SHOWN:
            shown.append(f"... and {len(result.created) - _MAX_SHOWN} more (in the log)")
        status.created_last = shown
        for binding in result.created:
            log.info("%s: ACL sync: created %s on %s", name, binding.describe(), self.flow.target)

    def _interval(self) -> int:
        return self.flow.sync_topic_acls_interval_seconds


def runs_acl_sync(flow: FlowConfig) -> bool:
    """Whether ``flow`` has an ACL sync job at all (enabled, switch on)."""
    return flow.enabled and flow.sync_topic_acls_enabled


# --- confluent-kafka <-> domain ---------------------------------------------------------

_NEEDS_OPERATOR = frozenset(
    {
        KafkaError.SECURITY_DISABLED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
    }
)


def _code(exc: KafkaException) -> int | None:
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


def from_kafka(binding: KafkaAclBinding) -> AclBinding | None:
    """confluent-kafka's binding as the domain's; None for what it does not model (an
    UNKNOWN operation). librdkafka calls Kafka's CLUSTER resource BROKER."""
    restype = "CLUSTER" if binding.restype == ResourceType.BROKER else binding.restype.name
    try:
        return AclBinding(
            resource_type=restype,  # type: ignore[arg-type]
            name=binding.name,
            pattern_type=binding.resource_pattern_type.name,  # type: ignore[arg-type]
            principal=binding.principal,
            host=binding.host,
            operation=binding.operation.name,
            permission=binding.permission_type.name,  # type: ignore[arg-type]
        )
    except ValueError:
        return None


def to_kafka(binding: AclBinding) -> KafkaAclBinding:
    """The domain's binding as confluent-kafka's (CLUSTER is librdkafka's BROKER)."""
    restype = "BROKER" if binding.resource_type == "CLUSTER" else binding.resource_type
    return KafkaAclBinding(
        ResourceType[restype],
        binding.name,
        ResourcePatternType[binding.pattern_type],
        binding.principal,
        binding.host,
        AclOperation[binding.operation],
        AclPermissionType[binding.permission],
    )
