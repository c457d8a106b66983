"""The event log and driver heartbeats on Kafka (confluent-kafka).

* :class:`EventLogWriter` is the coordinator leader's only way to write: a transactional
  producer with the fixed id of :class:`ControlSettings`. ``fence()`` (init) bumps the
  producer epoch, which aborts a previous leader's open transaction and makes every
  later write of that leader fail with :class:`Fenced`.
* :class:`EventLogReader` reads read_committed, so nothing an old leader wrote without
  committing is ever seen, by a coordinator, a driver or srm-control.
* :class:`BeatWriter` / :class:`BeatReader` carry driver heartbeats (JSON).

confluent-kafka rather than aiokafka: librdkafka implements transactions, fencing and
KIP-848-era brokers completely, and the drivers already use it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from srm_common.config.control import ControlSettings
from srm_common.control.beats import Beat
from srm_common.control.events import Envelope, decode, encode, event_key
from srm_common.errors import SrmError

TIMEOUT_S = 30.0


class ControlLogError(SrmError):
    """The control cluster cannot be reached or refused an operation."""


class Fenced(ControlLogError):
    """Another coordinator has become leader since this one started writing."""


def ensure_control_topics(settings: ControlSettings, *, timeout: float = TIMEOUT_S) -> None:
    """Create the event log (kept forever), heartbeats (an hour) and election topics."""
    admin = AdminClient(dict(settings.client))
    wanted = {
        settings.events_topic: {"retention.ms": "-1", "retention.bytes": "-1"},
        settings.drivers_topic: {"retention.ms": "3600000"},
        settings.election_topic: {"retention.ms": "3600000"},
    }
    try:
        existing = set(admin.list_topics(timeout=timeout).topics)
    except KafkaException as exc:
        raise ControlLogError(
            f"cannot reach the control cluster {settings.cluster!r}"
            f" ({settings.client.get('bootstrap.servers')}): {exc}; is it running?"
        ) from exc
    new = [
        NewTopic(name, 1, settings.replication_factor, config=config)
        for name, config in wanted.items()
        if name not in existing
    ]
    if not new:
        return
    for name, future in admin.create_topics(new, request_timeout=timeout).items():
        try:
            future.result(timeout)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise ControlLogError(f"cannot create control topic {name}: {exc}") from exc
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        topics = admin.list_topics(timeout=timeout).topics
        if all(
            name in topics and topics[name].partitions and topics[name].partitions[0].leader >= 0
            for name in wanted
        ):
            return
        time.sleep(0.1)
    raise ControlLogError(f"control topics on {settings.cluster!r} have no leader yet")


class EventLogWriter:
    """Appends events in transactions; only a fenced-in leader may hold one."""

    def __init__(self, settings: ControlSettings, *, client_id: str) -> None:
        self.topic = settings.events_topic
        self._producer = Producer(
            {
                **settings.client,
                "client.id": client_id,
                "transactional.id": settings.transactional_id,
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
        return [
            Envelope(e.event, e.at_ms, e.by, e.command_id, offsets[i])
            for i, e in enumerate(envelopes)
        ]

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


class EventLogReader:
    """Reads the event log from the beginning, committed events only."""

    def __init__(self, settings: ControlSettings, *, client_id: str) -> None:
        self.topic = settings.events_topic
        self._consumer = Consumer(
            {
                **settings.client,
                "client.id": client_id,
                "group.id": f"{settings.prefix}.reader.{client_id}",
                "enable.auto.commit": "false",
                "isolation.level": "read_committed",
                "enable.partition.eof": "true",
                "auto.offset.reset": "earliest",
            }
        )
        self._consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        self.at_end = False
        # The next offset this reader will read (-1 before it has read anything).
        self.position = -1
        self._carried: list[Envelope] = []

    def poll(self, timeout: float = 0.2, *, max_events: int = 1000) -> list[Envelope]:
        """New committed events (maybe none); sets ``at_end`` when caught up.

        A read error is raised after the whole batch is decoded, and the batch's events
        are returned by the next call: the consumer's position is already past them, so
        dropping them would leave a gap in every state folded from this reader."""
        events, self._carried = self._carried, []
        failure: ControlLogError | None = None
        for message in self._consumer.consume(max_events, timeout):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:  # noqa: SLF001
                    self.at_end = True
                elif failure is None:
                    failure = ControlLogError(f"cannot read the event log {self.topic}: {error}")
                continue
            self.at_end = False
            try:
                events.append(decode(message.value(), offset=message.offset()))
            except SrmError:
                self._carried = events  # nothing after an undecodable event is folded
                raise
        if failure is not None:
            self._carried = events
            raise failure
        self._update_position()
        return events

    def _update_position(self) -> None:
        try:
            (where,) = self._consumer.position([TopicPartition(self.topic, 0)])
        except KafkaException:
            return
        if where.offset >= 0:
            self.position = where.offset

    def read_to_end(self, timeout: float = TIMEOUT_S) -> list[Envelope]:
        """Everything committed so far; :class:`ControlLogError` if the end is not reached.

        Only on a new reader: librdkafka signals a partition's end once per arrival
        there, so a reader already at the end would wait for news forever."""
        deadline = time.monotonic() + timeout
        events: list[Envelope] = []
        self.at_end = False
        while not self.at_end:
            if time.monotonic() > deadline:
                raise ControlLogError(
                    f"could not read the event log {self.topic} to its end within"
                    f" {timeout:.0f} s; is the control cluster up?"
                )
            events.extend(self.poll(0.5))
        return events

    def close(self) -> None:
        self._consumer.close()


class EventLogEnd:
    """Where the committed event log ends now (its last stable offset), for a driver
    confirming that it has read every decision made before a moment."""

    def __init__(self, settings: ControlSettings) -> None:
        self.topic = settings.events_topic
        self._admin = AdminClient(dict(settings.client))

    def query(self, timeout: float = 5.0) -> int:
        """The end offset; :class:`ControlLogError` if the control cluster did not answer."""
        request = {TopicPartition(self.topic, 0): OffsetSpec.latest()}
        try:
            futures = self._admin.list_offsets(
                request, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout
            )
            return int(next(iter(futures.values())).result(timeout).offset)
        except (KafkaException, FutureTimeout) as exc:
            raise ControlLogError(f"cannot read where the event log ends: {exc}") from exc


def read_log(settings: ControlSettings, *, timeout: float = TIMEOUT_S) -> list[Envelope]:
    """The whole committed event log (for srm-control and tests)."""
    reader = EventLogReader(settings, client_id=f"srm-log-reader-{time.time_ns()}")
    try:
        return reader.read_to_end(timeout)
    finally:
        reader.close()


# -- driver heartbeats -----------------------------------------------------------------


class BeatWriter:
    """Sends heartbeats; ``send`` reports whether the last one was acknowledged."""

    def __init__(self, settings: ControlSettings, *, client_id: str) -> None:
        self.topic = settings.drivers_topic
        self._producer = Producer(
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
        self._consumer = Consumer(
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
