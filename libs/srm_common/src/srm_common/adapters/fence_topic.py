"""The fence topic on a target cluster (confluent-kafka): the leader writes fences
(:class:`FenceWriter`), drivers read it to its end to renew their leases into that
cluster (:class:`FenceWatch`). What a fence means: :mod:`srm_common.control.fences`.

One partition (a reader decides by the topic's order), ``cleanup.policy=delete`` with a
day's retention: the leader writes the fence in force again every
:data:`REWRITE_S`, so the topic always holds it and stays small.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from confluent_kafka import (
    OFFSET_BEGINNING,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import NewTopic

from srm_common.adapters import kafka_clients
from srm_common.config.control import ControlSettings
from srm_common.control.fences import Fence, FenceHistory
from srm_common.errors import ControlLogError

log = logging.getLogger(__name__)

RETENTION_MS = 24 * 3600 * 1000
REWRITE_S = 600.0


class FenceWriter:
    """Writes fences to one cluster's fence topic (created on first use)."""

    def __init__(self, settings: ControlSettings, cluster: str, *, client_id: str) -> None:
        self.cluster = cluster
        self.topic = settings.fences_topic
        self._client: Mapping[str, str] = settings.targets[cluster]
        self._factor = settings.replication_factor
        self._ready = False
        self._producer = kafka_clients.producer(
            {
                **self._client,
                "client.id": client_id,
                "acks": "all",
                "linger.ms": "0",
                "enable.idempotence": "true",
                "message.timeout.ms": "10000",
            }
        )

    def write(self, fence: Fence, timeout: float) -> None:
        """Append ``fence``; returns once the cluster acknowledged it, else
        :class:`ControlLogError`."""
        if not self._ready:
            self._create(timeout)
        outcome: list[KafkaError | None] = []
        self._producer.produce(  # partition 0, the one readers read, whatever the topic has
            self.topic,
            value=fence.to_bytes(),
            partition=0,
            on_delivery=lambda err, _msg: outcome.append(err),
        )
        self._producer.flush(timeout)
        if not outcome or outcome[0] is not None:
            reason = outcome[0] if outcome else f"no answer within {timeout:g} s"
            raise ControlLogError(f"cannot write a fence to {self.cluster!r}: {reason}")

    def _create(self, timeout: float) -> None:
        admin = kafka_clients.admin(dict(self._client))
        try:
            if self.topic not in admin.list_topics(timeout=timeout).topics:
                config = {"cleanup.policy": "delete", "retention.ms": str(RETENTION_MS)}
                topic = NewTopic(self.topic, 1, self._factor, config=config)
                admin.create_topics([topic], request_timeout=timeout)[self.topic].result(timeout)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise ControlLogError(
                    f"cannot create the fence topic on {self.cluster!r}: {exc}"
                ) from exc
        self._ready = True

    def close(self) -> None:
        self._producer.flush(1)


class FenceWatch:
    """A driver's view of one cluster's fence topic, read to its end on demand."""

    def __init__(self, settings: ControlSettings, cluster: str, *, client_id: str) -> None:
        self.cluster = cluster
        self.topic = settings.fences_topic
        self.history = FenceHistory()
        self._position = 0
        self._consumer = kafka_clients.consumer(
            {
                **settings.targets[cluster],
                "client.id": client_id,
                "group.id": f"{settings.prefix}.fences.{client_id}",
                "enable.auto.commit": "false",
                "auto.offset.reset": "earliest",
                "enable.partition.eof": "false",
            }
        )
        self._consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])

    def read_to_end(self, timeout: float) -> bool:
        """Read every record the topic holds now (the end is asked first); False when
        the cluster did not answer in time or the topic does not exist (yet)."""
        try:
            low, high = self._consumer.get_watermark_offsets(
                TopicPartition(self.topic, 0), timeout=timeout, cached=False
            )
        except KafkaException:
            return False
        if high < 0:
            return False
        if self._position < low:
            # Retention deleted records this reader never saw: start over from what is left.
            self.history = FenceHistory()
            self._consumer.assign([TopicPartition(self.topic, 0, low)])
            self._position = low
        while self._position < high:
            messages = self._consumer.consume(500, timeout)
            if not messages:
                return False
            for message in messages:
                if message.error() is not None:
                    continue
                self.history.add([Fence.from_bytes(message.value())])
                self._position = message.offset() + 1
        return True

    def close(self) -> None:
        self._consumer.close()
