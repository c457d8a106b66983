"""The admin requests of a flow's topic sync (:mod:`srm_driver.topic_sync`): batched,
with one outcome per topic.

A change is sent in requests under the target's records limit (:class:`RecordBudget`);
a refusal before anything is sent is one :class:`KafkaAdminError` for the batch. Each
topic's answer is its result, :data:`SKIPPED` when there is nothing to do (another
client got there first, or the topic went away), or :data:`FAILED` with a line in the
round's ``failures`` naming ``cluster:topic`` and what to check.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException
from srm_common.config.model import FlowConfig

from srm_driver.kafka_admin import KafkaAdminError, RecordBudget

_T = TypeVar("_T")
_I = TypeVar("_I")
_K = TypeVar("_K", bound=Hashable)

FAILED = object()
SKIPPED = object()
NOTHING = (FAILED, SKIPPED)

# Another client got there first (created the topic, added the partitions) or the topic
# was deleted between listing and describing: nothing to do this round.
_NO_CHANGE = frozenset(
    {
        KafkaError.TOPIC_ALREADY_EXISTS,
        KafkaError.INVALID_PARTITIONS,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
)
_AUTHORIZATION = frozenset(
    {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED}
)
_UNREACHABLE = frozenset(
    {
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError.REQUEST_TIMED_OUT,
    }
)


class TopicRequests:
    """Sends the admin requests of ``flow``'s topic sync and judges each topic's answer.

    ``request_timeout`` is what the client gives a request; a future is waited for 5 s
    longer, so a slow broker's answer arrives instead of a client-side timeout.
    """

    def __init__(self, flow: FlowConfig, budget: RecordBudget, request_timeout: float) -> None:
        self._flow = flow
        self._budget = budget
        self.request_timeout = request_timeout

    def chunked(
        self,
        alias: str,
        what: str,
        items: Sequence[_I],
        cost: Callable[[_I], int],
        key: Callable[[_I], _K],
        send: Callable[[list[_I]], Mapping[_K, Future[_T]]],
    ) -> dict[_K, Future[_T]]:
        """``items`` sent in requests under the target's records limit (see
        :class:`RecordBudget`), every request's refusal before sending made one error."""
        return self._budget.send(
            f"flow {self._flow.name}: {what} on {alias!r}",
            items,
            cost,
            key,
            lambda chunk: self.submit(alias, what, lambda: send(chunk)),
            timeout=self.request_timeout + 5,
        )

    def submit(self, alias: str, what: str, call: Callable[[], _T]) -> _T:
        """Send a request; a refusal before anything is sent is one error for the batch."""
        try:
            return call()
        except KafkaException as exc:
            raise KafkaAdminError(
                f"flow {self._flow.name}: cannot {what} on cluster {alias!r}: {exc};"
                f" is {alias!r} reachable?"
            ) from exc

    def result(
        self, alias: str, topic: str, action: str, future: Future[_T], failures: list[str]
    ) -> _T | object:
        """The future's result, ``SKIPPED`` when there is nothing to do, else ``FAILED``."""
        try:
            return future.result(self.request_timeout + 5)
        except FutureTimeoutError:
            waited = self.request_timeout + 5
            failures.append(
                f"cannot {action} {alias}:{topic}: no answer within {waited:g} s;"
                f" is {alias!r} reachable?"
            )
        except KafkaException as exc:
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            if error is not None and error.code() in _NO_CHANGE:
                return SKIPPED
            failures.append(f"cannot {action} {alias}:{topic}: {self._hint(alias, error, exc)}")
        return FAILED

    def _hint(self, alias: str, error: KafkaError | None, exc: Exception) -> str:
        reason = error.str() if error is not None else str(exc)
        code = error.code() if error is not None else None
        if code == KafkaError.INVALID_REPLICATION_FACTOR:
            check = (
                f"replication.factor {self._flow.replication_factor} of flow"
                f" {self._flow.name} must not exceed the brokers of {alias!r}"
            )
        elif code == KafkaError.INVALID_CONFIG:
            check = (
                f"a config copied from {self._flow.source!r} is not valid on {alias!r};"
                " add its name to config.properties.exclude"
            )
        elif code in _AUTHORIZATION:
            check = (
                f"grant the admin client of {alias!r} the topic ACLs SRM needs"
                " (DESCRIBE_CONFIGS, CREATE, ALTER, ALTER_CONFIGS)"
            )
        elif code == KafkaError.POLICY_VIOLATION:
            check = f"a create-topic or alter-config policy of {alias!r} refused it"
        elif code in _UNREACHABLE:
            check = f"is {alias!r} reachable?"
        else:
            check = f"see the broker log of {alias!r}"
        return f"{reason}; {check}"
