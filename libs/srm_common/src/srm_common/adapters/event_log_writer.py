"""The event log's only writer (confluent-kafka): a transactional producer with the fixed
id of :class:`~srm_common.config.control.ControlSettings`, held by the coordinator
leader. ``fence()`` (init) bumps the producer epoch, which aborts a previous leader's
open transaction and makes every later write of that leader fail with :class:`Fenced`.

confluent-kafka rather than aiokafka: librdkafka implements transactions, fencing and
KIP-848-era brokers completely, and the drivers already use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from confluent_kafka import (
    KafkaError,
    KafkaException,
)

from srm_common.adapters import kafka_clients
from srm_common.adapters.control_topics import TIMEOUT_S
from srm_common.config.control import ControlSettings
from srm_common.control.events import Envelope, encode, event_key
from srm_common.errors import ControlLogError, Fenced


class EventLogWriter:
    """Appends events in transactions; only a fenced-in leader may hold one."""

    def __init__(self, settings: ControlSettings, *, client_id: str) -> None:
        self.topic = settings.events_topic
        self._producer = kafka_clients.producer(
            {
                **settings.client,
                "client.id": client_id,
                "transactional.id": settings.transactional_id,
                # A deleted event log must stay deleted (reported lost), not come back
                # empty because the leader wrote to it.
                "allow.auto.create.topics": "false",
                "enable.idempotence": "true",
                "acks": "all",
                "transaction.timeout.ms": "30000",
            }
        )

    def fence(self, timeout: float = TIMEOUT_S) -> None:
        """Take over the transactional id: any older leader can no longer commit."""
        try:
            self._producer.init_transactions(timeout)
        except KafkaException as exc:
            raise ControlLogError(f"cannot take over the event log: {exc}") from exc

    def append(self, envelopes: Sequence[Envelope], timeout: float = TIMEOUT_S) -> list[Envelope]:
        """Write ``envelopes`` in one transaction; returns them with their log offsets."""
        if not envelopes:
            return []
        offsets: dict[int, int] = {}
        errors: list[KafkaError] = []

        def delivered(index: int):  # noqa: ANN202 - a librdkafka callback
            def callback(err: KafkaError | None, msg: object) -> None:
                if err is not None:
                    errors.append(err)
                else:
                    offsets[index] = msg.offset()  # type: ignore[attr-defined]

            return callback

        try:
            self._producer.begin_transaction()
            for index, envelope in enumerate(envelopes):
                self._producer.produce(
                    self.topic,
                    key=event_key(envelope.event),
                    value=encode(envelope),
                    timestamp=envelope.at_ms,
                    on_delivery=delivered(index),
                )
            self._producer.commit_transaction(timeout)
        except KafkaException as exc:
            error = exc.args[0]
            self._abort_quietly()
            if _is_fenced(error):
                raise Fenced(
                    "this coordinator was fenced: another one leads the event log now"
                ) from exc
            raise ControlLogError(f"cannot append to the event log: {error}") from exc
        if errors:
            raise ControlLogError(f"cannot append to the event log: {errors[0]}")
        return [replace(e, offset=offsets[i]) for i, e in enumerate(envelopes)]

    def _abort_quietly(self) -> None:
        try:
            self._producer.abort_transaction(5)
        except KafkaException:
            pass

    def close(self) -> None:
        self._producer.flush(5)


def _is_fenced(error: KafkaError) -> bool:
    return error.code() in (
        KafkaError._FENCED,  # noqa: SLF001 - librdkafka's own code
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ) or (error.fatal() and "fenced" in error.str().lower())
