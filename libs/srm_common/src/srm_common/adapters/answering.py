"""Admin requests that wait for a broker are sent only to a cluster that answers.

Measured with confluent-kafka and librdkafka 2.15.1 (a broker killed, its port refusing
connections): while an admin client's ListOffsets or DescribeTopics waits for a broker
of a cluster that is down, with sparse connections the client asks for a connection to
it on every state change of that broker, skipping the reconnect backoff, for the
request's whole timeout: up to a core per client, where a metadata request to the same
dead broker costs 0.4 %. Every admin client is now built with persistent connections
(:func:`srm_common.adapters.kafka_clients.admin`), which ends that spin (docs/design.md,
"A cluster that is down costs the others nothing").

This module stays for what it still gives: once a client's request got no answer
(:func:`failed`), its next one is preceded by a metadata request for one of the topics
it asks about (:func:`check`): a cluster still away fails that after one metadata
timeout, raising :class:`NoAnswer`, rather than each request after its own, and the
request is sent only once the cluster answers. That metadata request also refreshes what
librdkafka knows of the topic's leaders, which a look after a failure needs anyway.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

K = TypeVar("K")
# What librdkafka fails a request with when no broker answered.
_NO_ANSWER = frozenset(
    {KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN}  # noqa: SLF001
)
# Clients whose last request got no answer; weak, so a client dropped is forgotten.
_failed: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


class NoAnswer(KafkaException):
    """The cluster did not answer the metadata request sent before an admin request: a
    ``KafkaException`` (a transport failure), so callers handle it as they handle the
    request's own failures."""


def check(admin: Any, topic: str, timeout: float) -> None:
    """Before a request of ``admin`` about ``topic``: when its last request got no
    answer, ask for ``topic``'s metadata first; :class:`NoAnswer` if none comes."""
    if _failed.get(admin):
        try:
            admin.list_topics(topic, timeout=timeout)
        except KafkaException as exc:
            why = exc.args[0].str() if exc.args and isinstance(exc.args[0], KafkaError) else exc
            text = f"the cluster does not answer: {why}"
            raise NoAnswer(KafkaError(KafkaError._TRANSPORT, text)) from exc  # noqa: SLF001
        _failed.pop(admin, None)


def send(
    admin: Any, topic: str, request: Callable[[], Mapping[K, Future[Any]]], timeout: float
) -> Mapping[K, Future[Any]]:
    """``request()`` (an admin request about ``topic``, among others) after :func:`check`,
    its futures' outcomes noted as they come (:func:`noted`)."""
    check(admin, topic, timeout)
    futures = request()
    for future in futures.values():
        future.add_done_callback(lambda done: noted(admin, done.exception()))
    return futures


def unanswered(error: BaseException | None) -> bool:
    """Whether a request failed with ``error`` because no broker answered (a timeout, a
    transport failure, :class:`NoAnswer`), not because a broker said no."""
    if isinstance(error, FutureTimeout):
        return True
    if not isinstance(error, KafkaException) or not error.args:
        return False
    code = getattr(error.args[0], "code", None)
    return callable(code) and code() in _NO_ANSWER


def failed(admin: Any) -> None:
    """``admin``'s last request got no answer: :func:`check` looks first next time."""
    _failed[admin] = True


def answered(admin: Any) -> None:
    """``admin``'s last request was answered."""
    _failed.pop(admin, None)


def noted(admin: Any, error: BaseException | None) -> None:
    """:func:`failed` if ``error`` says no broker answered, else :func:`answered`."""
    if unanswered(error):
        failed(admin)
    else:
        answered(admin)
