"""Offsets read for many partitions at once, and what a failed read costs: the metadata
it refreshes follows what failed, and a listing of the whole cluster comes at most every
few seconds per client (:mod:`srm_driver.kafka_admin`)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from srm_driver import kafka_admin, topic_listing


class FakeAdmin:
    """ListOffsets answered from ``ends``; a partition in ``leaderless`` fails until a
    listing (whole, or by its topic's name) refreshed its metadata."""

    def __init__(self, ends: dict[tuple[str, int], int], leaderless: set[tuple[str, int]]):
        self.ends = ends
        self.leaderless = set(leaderless)
        self.requests = 0
        self.listed: list[str | None] = []
        self.refreshes = True  # a listing gives the partitions their leaders

    def list_offsets(self, request: dict[Any, Any], **_kwargs: Any) -> dict[Any, Future[Any]]:
        self.requests += 1
        out: dict[Any, Future[Any]] = {}
        for tp in request:
            future: Future[Any] = Future()
            if (tp.topic, tp.partition) in self.leaderless:
                future.set_exception(
                    KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION))
                )
            else:
                future.set_result(type("Info", (), {"offset": self.ends[(tp.topic, tp.partition)]}))
            out[tp] = future
        return out

    def list_topics(self, topic: str | None = None, timeout: float = 0) -> None:
        self.listed.append(topic)
        if self.refreshes:
            self.leaderless = {tp for tp in self.leaderless if topic is not None and tp[0] != topic}


def _partitions(topics: int) -> dict[tuple[str, int], int]:
    return {(f"t{n:03}", 0): 7 for n in range(topics)}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [100.0]
    monkeypatch.setattr(kafka_admin, "_clock", lambda: now[0])
    return now


def test_a_failed_read_of_a_few_topics_refreshes_them_by_name(clock: list[float]) -> None:
    ends = _partitions(3)
    admin = FakeAdmin(ends, {("t001", 0)})
    found, failed = kafka_admin.read_end_offsets(admin, ends)  # type: ignore[arg-type]
    assert admin.listed == ["t001"] and found == ends and not failed


def test_failed_reads_of_many_topics_list_the_cluster_at_most_every_few_seconds(
    clock: list[float],
) -> None:
    """A cold start's partitions waiting for their leaders fail a read every 2 s per flow:
    each failure listed the whole cluster (metadata of every topic it holds). Now the
    first does, and the reads of the next seconds are answered without a listing or a
    second attempt; the partitions that still fail wait for their next round."""
    ends = _partitions(40)
    waiting = {tp for tp in ends if tp[0] >= "t020"}
    admin = FakeAdmin(ends, waiting)
    admin.refreshes = False  # the brokers have not loaded them yet
    _found, failed = kafka_admin.read_end_offsets(admin, ends)  # type: ignore[arg-type]
    assert admin.listed == [None] and admin.requests == 2 and set(failed) == waiting
    for _ in range(2):
        clock[0] += 2
        _found, failed = kafka_admin.read_end_offsets(admin, ends)  # type: ignore[arg-type]
        assert set(failed) == waiting
    assert admin.listed == [None] and admin.requests == 4, "no listing, one attempt each"
    clock[0] += kafka_admin._LIST_EVERY_S
    admin.refreshes = True  # loaded meanwhile: the next listing finds their leaders
    found, failed = kafka_admin.read_end_offsets(admin, ends)  # type: ignore[arg-type]
    assert admin.listed == [None, None] and admin.requests == 6
    assert found == ends and not failed
    another = FakeAdmin(ends, waiting)  # another client (another cluster) lists its own
    kafka_admin.read_end_offsets(another, ends)  # type: ignore[arg-type]
    assert another.listed == [None]


class SilentAdmin(FakeAdmin):
    """A cluster that takes the requests and never answers (its futures never finish)."""

    def list_offsets(self, request: dict[Any, Any], **_kwargs: Any) -> dict[Any, Future[Any]]:
        self.requests += 1
        return {tp: Future() for tp in request}

    def describe_topics(self, topics: Any, **_kwargs: Any) -> dict[str, Future[Any]]:
        return {name: Future() for name in topics.topic_names}


def test_reads_a_cluster_never_answers_fail_with_a_reason_not_a_bare_timeout(
    clock: list[float],
) -> None:
    """Seen at 30,000 partitions: a describe the brokers did not answer in time ended a
    flow's pass with a bare TimeoutError and its traceback. Unanswered reads are now the
    driver's own errors (a partition that waits, or one line naming the topic)."""
    ends = _partitions(2)
    admin = SilentAdmin(ends, set())
    admin.refreshes = False
    found, failed = kafka_admin.read_end_offsets(admin, ends, timeout=0.01)  # type: ignore[arg-type]
    assert not found and set(failed) == set(ends)
    assert all("no answer within" in why for why in failed.values())
    with pytest.raises(kafka_admin.KafkaAdminError, match="no answer about topic 't000'"):
        topic_listing.topic_ids(admin, ["t000"], timeout=0.01)  # type: ignore[arg-type]


class DownAdmin(FakeAdmin):
    """A cluster that is down while ``up`` is False: ListOffsets times out (librdkafka
    spins a third of a core meanwhile), metadata requests fail."""

    def __init__(self, ends: dict[tuple[str, int], int]) -> None:
        super().__init__(ends, set())
        self.up = False

    def list_offsets(self, request: dict[Any, Any], **kwargs: Any) -> dict[Any, Future[Any]]:
        if self.up:
            return super().list_offsets(request, **kwargs)
        self.requests += 1
        out: dict[Any, Future[Any]] = {}
        for tp in request:
            out[tp] = Future()
            out[tp].set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out")))
        return out

    def list_topics(self, topic: str | None = None, timeout: float = 0) -> None:
        if not self.up:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Broker transport failure"))
        super().list_topics(topic, timeout)


def test_a_cluster_that_is_down_gets_no_list_offsets_until_it_answers_metadata(
    clock: list[float],
) -> None:
    """After a ListOffsets no broker answered, the next read asks for metadata first (a
    cluster still down fails that cheaply: every partition waits, with why); ListOffsets
    goes out again once the cluster answers."""
    ends = _partitions(3)
    admin = DownAdmin(ends)
    for _ in range(3):
        found, failed = kafka_admin.read_end_offsets(admin, ends)  # type: ignore[arg-type]
        assert not found and set(failed) == set(ends)
    assert admin.requests == 1
    assert all("does not answer" in why for why in failed.values())
    admin.up = True
    found, failed = kafka_admin.read_end_offsets(admin, ends)  # type: ignore[arg-type]
    assert found == ends and not failed and admin.requests == 2
