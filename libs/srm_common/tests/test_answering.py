"""Admin requests sent only to a cluster that answers (adapters/answering.py)."""

from __future__ import annotations

from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from srm_common.adapters import answering

TIMED_OUT = KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out"))  # noqa: SLF001
REFUSED = KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))


class Admin:
    """A cluster that is down while ``up`` is False (metadata requests fail)."""

    def __init__(self) -> None:
        self.up = True
        self.metadata: list[str] = []

    def list_topics(self, topic: str, timeout: float) -> object:
        self.metadata.append(topic)
        if not self.up:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "refused"))  # noqa: SLF001
        return object()


def test_no_answer_is_told_from_a_broker_saying_no() -> None:
    assert answering.unanswered(TIMED_OUT) and answering.unanswered(FutureTimeout())
    assert not answering.unanswered(REFUSED) and not answering.unanswered(None)


def test_after_no_answer_the_next_request_waits_for_metadata() -> None:
    admin = Admin()
    answering.check(admin, "t", 1.0)
    assert admin.metadata == []  # answered so far: nothing asked first
    answering.noted(admin, TIMED_OUT)
    admin.up = False
    with pytest.raises(answering.NoAnswer, match="does not answer") as raised:
        answering.check(admin, "t", 1.0)
    assert isinstance(raised.value, KafkaException)  # handled as the request's own failure
    assert answering.unanswered(raised.value)
    admin.up = True
    answering.check(admin, "t", 1.0)
    answering.check(admin, "t", 1.0)
    assert admin.metadata == ["t", "t"]  # once down, once up; then answered


def test_send_notes_the_outcome_of_the_futures_as_they_end() -> None:
    admin = Admin()
    future: Future[Any] = Future()
    futures = answering.send(admin, "t", lambda: {"t": future}, 1.0)
    assert futures == {"t": future}
    future.set_exception(TIMED_OUT)
    answering.check(admin, "t", 1.0)
    assert admin.metadata == ["t"]
