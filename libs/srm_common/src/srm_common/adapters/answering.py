"""Admin requests that wait for a broker are sent only to a cluster that answers.

Measured with confluent-kafka and librdkafka 2.15.1 (a broker killed, its port refusing
connections): while an admin client's ListOffsets or DescribeTopics waits for a broker
of a cluster that is down, the client's broker thread and main thread pass state
changes back and forth for the request's whole timeout: a third of a core per client for
ListOffsets (20.9 % and 11.7 %), two thirds for DescribeTopics (43.5 % and 25.4 %), where
a metadata request to the same dead broker costs 0.4 %. In the site loss test (one of
three clusters killed) the two surviving coordinators spent 37-85 % of a core each and a
driver 33-77 % on such clients while the cluster was down (an event log's reader
describes its topic every second), and a driver restarting on the same two cores took
over a minute to start Spark.

So once a client's request got no answer (:func:`failed`), its next one is preceded by
a metadata request for one of the topics it asks about (:func:`check`): a cluster still
away fails that cheaply, raising :class:`NoAnswer`, and the request is sent only once the
cluster answers. That metadata request also refreshes what librdkafka knows of the
topic's leaders, which a look after a failure needs anyway.
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
