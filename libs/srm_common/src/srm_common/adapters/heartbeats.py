"""Driver heartbeats on their control topic (JSON :class:`~srm_common.control.beats.Beat`):
:class:`BeatWriter` for a driver, :class:`BeatReader` for the coordinator's membership.
"""

from __future__ import annotations

from dataclasses import replace

from confluent_kafka import (
    KafkaException,
    TopicPartition,
)

from srm_common.adapters import kafka_clients
from srm_common.adapters.control_topics import TIMEOUT_S
from srm_common.config.control import ControlSettings
from srm_common.control.beats import Beat
from srm_common.errors import ControlLogError


class BeatWriter:
    """Sends heartbeats; ``send`` reports whether the last one was acknowledged."""

    def __init__(self, settings: ControlSettings, *, client_id: str) -> None:
        self.topic = settings.drivers_topic
        self._producer = kafka_clients.producer(
            {
                **settings.client,
                "client.id": client_id,
                "acks": "all",
                "linger.ms": "0",
                "message.timeout.ms": str(settings.session_timeout_ms),
            }
        )

    def send(self, beat: Beat, timeout: float) -> bool:
        acked: list[bool] = []
        self._producer.produce(
            self.topic,
            key=beat.driver.encode(),
            value=beat.to_bytes(),
            on_delivery=lambda err, _msg: acked.append(err is None),
        )
        self._producer.flush(timeout)
        return bool(acked and acked[0])

    def close(self) -> None:
        self._producer.flush(5)


class BeatReader:
    """Heartbeats from ``since_ms`` on (older ones do not matter to membership)."""

    def __init__(self, settings: ControlSettings, *, client_id: str, since_ms: int) -> None:
        self.topic = settings.drivers_topic
        self._consumer = kafka_clients.consumer(
            {
                **settings.client,
                "client.id": client_id,
                "group.id": f"{settings.prefix}.beats.{client_id}",
                "enable.auto.commit": "false",
                "auto.offset.reset": "latest",
            }
        )
        try:
            start = self._consumer.offsets_for_times(
                [TopicPartition(self.topic, 0, since_ms)], timeout=TIMEOUT_S
            )
        except KafkaException as exc:
            self._consumer.close()
            raise ControlLogError(f"cannot read heartbeats from {self.topic}: {exc}") from exc
        self._consumer.assign(start)

    def poll(self, timeout: float = 0.1) -> list[Beat]:
        beats = []
        for message in self._consumer.consume(1000, timeout):
            if message.error() is None:
                beat = Beat.from_bytes(message.value())
                if beat is not None:
                    beats.append(replace(beat, offset=message.offset()))
        return beats

    def close(self) -> None:
        self._consumer.close()
