"""Where the event log ends: a look that failed starts the next from fresh metadata
(a fake admin client; the adapter against real Kafka is tests/integration/
test_event_log_contract.py)."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException
from srm_common.adapters import event_log_end
from srm_common.adapters.event_log_end import REBUILD_AFTER, EventLogEnd
from srm_common.errors import ControlLogError
from srm_common.testing import FAKE_CONTROL

NO_LEADER = KafkaException(KafkaError(KafkaError._NOENT, "Failed to query partition leaders"))


class StaleAdmin:
    """librdkafka's list_offsets answered from a metadata cache that says the partition
    has no leader, until the topic's metadata is asked for again (``fresh_after``
    metadata requests; None: never)."""

    def __init__(self, fresh_after: int | None) -> None:
        self.fresh_after = fresh_after
        self.metadata_requests = 0

    def list_offsets(self, request, isolation_level, request_timeout):  # type: ignore[no-untyped-def]
        future: Future[object] = Future()
        if self.fresh_after is None or self.metadata_requests < self.fresh_after:
            future.set_exception(NO_LEADER)
        else:
            future.set_result(SimpleNamespace(offset=42))
        return {next(iter(request)): future}

    def list_topics(self, topic: str, timeout: float) -> object:
        self.metadata_requests += 1
        return object()


def _end(monkeypatch: pytest.MonkeyPatch, admins: list[StaleAdmin]) -> EventLogEnd:
    made = iter(admins)
    monkeypatch.setattr(event_log_end.kafka_clients, "admin", lambda keys: next(made))
    return EventLogEnd(FAKE_CONTROL)


def test_a_failed_look_refreshes_the_metadata_so_the_next_one_finds_the_leader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    admin = StaleAdmin(fresh_after=1)
    end = _end(monkeypatch, [admin])
    with pytest.raises(ControlLogError, match="cannot read where the event log ends"):
        end.query(0.1)
    assert end.query(0.1) == 42
    assert admin.metadata_requests == 1  # before the second look


def test_a_client_that_keeps_failing_is_built_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    stuck, fresh = StaleAdmin(fresh_after=None), StaleAdmin(fresh_after=0)
    end = _end(monkeypatch, [stuck, fresh])
    for _ in range(REBUILD_AFTER):
        with pytest.raises(ControlLogError):
            end.query(0.1)
    assert end.query(0.1) == 42  # the new client's answer
    assert stuck.metadata_requests == REBUILD_AFTER - 1


class DeadAdmin(StaleAdmin):
    """A cluster that is down (``up`` False): ListOffsets times out, metadata fails."""

    def __init__(self) -> None:
        super().__init__(fresh_after=0)
        self.up = False
        self.offset_requests = 0

    def list_offsets(self, request, isolation_level, request_timeout):  # type: ignore[no-untyped-def]
        self.offset_requests += 1
        if self.up:
            return super().list_offsets(request, isolation_level, request_timeout)
        future: Future[object] = Future()
        future.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out")))
        return {next(iter(request)): future}

    def list_topics(self, topic: str, timeout: float) -> object:
        if not self.up:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Broker transport failure"))
        return super().list_topics(topic, timeout)


def test_a_cluster_that_is_down_gets_no_list_offsets_until_it_answers_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """librdkafka spends a third of a core per client while a ListOffsets waits for a
    dead leader (adapters/offset_lookups.py): after one that got no answer, the cluster
    is asked for metadata first, and ListOffsets only once it answers."""
    dead = DeadAdmin()
    end = _end(monkeypatch, [dead, dead, dead])  # rebuilt every REBUILD_AFTER failures
    with pytest.raises(ControlLogError, match="timed out"):
        end.query(0.1)
    for _ in range(2 * REBUILD_AFTER):  # the client built anew looks first as well
        with pytest.raises(ControlLogError, match="does not answer"):
            end.query(0.1)
    assert dead.offset_requests == 1
    dead.up = True
    assert end.query(0.1) == 42
    assert dead.offset_requests == 2
