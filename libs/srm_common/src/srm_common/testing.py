"""Fakes shared by the unit tests of every package (no Kafka, no clock of the machine)."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaPartition
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from srm_common.adapters.discovery import DiscoveryError, DiscoveryPending
from srm_common.config.control import ControlSettings
from srm_common.config.model import FlowConfig
from srm_common.control.events import Envelope, encode
from srm_common.domain.tasks import TopicPartition

if TYPE_CHECKING:
    from srm_common.adapters.event_log_reader import EventLogReader

# Control settings of backup's log for tests whose Kafka is faked: nothing listens on 9.
FAKE_CONTROL = ControlSettings(
    cluster="backup",
    client={"bootstrap.servers": "127.0.0.1:9"},
    prefix="srm-control",
    session_timeout_ms=10_000,
    heartbeat_interval_ms=1000,
    replication_factor=-1,
)


class FakeDiscovery:
    """:class:`~srm_common.adapters.discovery.Discovery` answering from dicts by flow
    name. ``failing`` flows raise as an unreachable cluster would, ``pending`` ones as
    while the listing is still being taken; ``asked`` and ``fresh_after`` record calls."""

    def __init__(
        self,
        partitions: dict[str, list[TopicPartition]],
        groups: dict[str, list[str]] | None = None,
    ) -> None:
        self.found = partitions
        self.found_groups = groups or {}
        self.failing: set[str] = set()
        self.pending: set[str] = set()
        self.asked: list[str] = []
        self.fresh_after: list[int] = []

    def discover(
        self, flow: FlowConfig, fresh_after_ms: int
    ) -> tuple[list[TopicPartition], list[str]]:
        self.asked.append(flow.name)
        self.fresh_after.append(fresh_after_ms)
        if flow.name in self.pending:
            raise DiscoveryPending(flow.source)
        if flow.name in self.failing:
            raise DiscoveryError(f"{flow.name}: cannot list topics of {flow.source}: down")
        return sorted(self.found.get(flow.name, [])), sorted(self.found_groups.get(flow.name, []))

    def close(self) -> None:
        pass


class Clock:
    """A clock in seconds that moves only when a test moves it: by setting ``now``
    (seconds) or ``at_ms`` (milliseconds), or by :meth:`sleep`, which records what was
    slept in ``slept``. Calling it reads it, as a ``clock=`` of the code under test calls
    ``time.monotonic`` or ``time.time``; ``monotonic`` and ``sleep`` let it stand in for
    the ``time`` module itself (``monkeypatch.setattr(module, "time", clock)``)."""

    def __init__(self, at_ms: int = 0) -> None:
        self.now = at_ms / 1000
        self.slept: list[float] = []

    @property
    def at_ms(self) -> int:
        return round(self.now * 1000)

    @at_ms.setter
    def at_ms(self, value: int) -> None:
        self.now = value / 1000

    def __call__(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class FakeEventTopic:
    """The event log topic as :class:`~srm_common.adapters.event_log_reader.EventLogReader` sees
    it through ``consumer()`` and ``admin()``: records by offset and a topic id that a
    test changes (``append`` events or raw bytes, ``delete``, ``recreate``).

    Its consumer reads on from its position whatever the topic holds now, as librdkafka
    does when a topic is recreated under it; past the end of a recreated topic it says
    ``_AUTO_OFFSET_RESET`` (``auto.offset.reset=error``). With nothing new to hand out
    it waits for a change up to the timeout it is given, as librdkafka's ``consume``
    does (a follower thread on a fake that answered at once would spin, and starve the
    threads beside it of the GIL: ~100 ms a request to a gateway served in a test)."""

    def __init__(self, topic: str = "srm-control.log.internal") -> None:
        self.topic = topic
        self.topic_id: str | None = "topic-1"
        self.records: list[tuple[int, bytes]] = []
        self._created = 1
        self.changes = 0  # counts appends, deletes and re-creations
        self.changed = threading.Condition()

    def touch(self) -> None:
        """Tell waiting consumers the topic changed (every method that changes it does)."""
        with self.changed:
            self.changes += 1
            self.changed.notify_all()

    def append(self, *items: object) -> None:
        """Envelopes (encoded) or bytes, at the next offsets; a commit marker after each."""
        for item in items:
            value = encode(item) if isinstance(item, Envelope) else bytes(item)  # type: ignore[arg-type]
            self.records.append((self.end(), value))
        self.touch()

    def end(self) -> int:
        return self.records[-1][0] + 2 if self.records else 0

    def delete(self) -> None:
        self.topic_id = None
        self.records = []
        self.touch()

    def recreate(self) -> None:
        self._created += 1
        self.topic_id = f"topic-{self._created}"
        self.records = []
        self.touch()

    def consumer(self) -> FakeLogConsumer:
        return FakeLogConsumer(self)

    def admin(self) -> FakeLogAdmin:
        return FakeLogAdmin(self)


class InMemoryEventLog(FakeEventTopic):
    """The event log in memory, for unit tests of whatever reads or writes it: the fake
    of the control path's log ports, kept honest by the contract suite that runs the
    same tests on it and on Kafka (``tests/integration/test_event_log_contract.py``).

    :meth:`reader` is the production reader (:class:`EventLogReader`) over this topic,
    so the identity, skipping and loss rules are the real ones; :meth:`writer` appends
    envelopes in one "transaction" each (a commit marker after each batch);
    :meth:`log_end` says where the log ends and whether somebody leads (``leading``)."""

    def __init__(self, topic: str = "srm-control.log.internal") -> None:
        super().__init__(topic)
        self.leading = False
        self.written: list[Envelope] = []

    def reader(self, known_log: str | None = None, *, client_id: str = "test") -> EventLogReader:
        from srm_common.adapters.event_log_reader import EventLogReader

        legacy = self.topic.endswith(".events.internal")  # an earlier release's single log
        prefix = self.topic.removesuffix(".events.internal").removesuffix(".log.internal")
        reader = EventLogReader(
            replace(FAKE_CONTROL, prefix=prefix, legacy=legacy),
            client_id=client_id,
            known_log=known_log,
            consumer=self.consumer(),  # type: ignore[arg-type]
            admin=self.admin(),  # type: ignore[arg-type]
        )
        reader.CHECK_S = 0.0  # look at the topic id at every poll
        return reader

    def put(self, envelopes: Sequence[Envelope]) -> None:
        """Store ``envelopes`` at the offsets they carry (increasing, after what is held):
        a log as some test wrote it down."""
        for envelope in envelopes:
            assert envelope.offset >= self.end() - 1, "offsets must increase"
            self.records.append((envelope.offset, encode(envelope)))
        self.touch()

    def writer(self) -> InMemoryLogWriter:
        return InMemoryLogWriter(self)

    def log_end(self) -> InMemoryLogEnd:
        return InMemoryLogEnd(self)

    def write(self, envelopes: Sequence[Envelope]) -> list[Envelope]:
        """Append ``envelopes`` as one transaction; them with their offsets."""
        start = self.end()  # the commit marker takes the offset after the last record
        written = [replace(e, offset=start + i) for i, e in enumerate(envelopes)]
        for envelope in written:
            self.records.append((envelope.offset, encode(envelope)))
        self.written += written
        self.touch()
        return written


class InMemoryLogWriter:
    """:class:`~srm_common.adapters.event_log_writer.EventLogWriter` of an
    :class:`InMemoryEventLog`; ``error`` set: every append raises it."""

    def __init__(self, log: InMemoryEventLog) -> None:
        self.log = log
        self.error: Exception | None = None
        self.closed = False

    def fence(self) -> None:
        pass

    def append(self, envelopes: Sequence[Envelope]) -> list[Envelope]:
        if self.error is not None:
            raise self.error
        return self.log.write(envelopes)

    def close(self) -> None:
        self.closed = True


class InMemoryLogEnd:
    """:class:`~srm_common.adapters.event_log_end.EventLogEnd` of an :class:`InMemoryEventLog`."""

    def __init__(self, log: InMemoryEventLog) -> None:
        self.log = log

    def query(self, timeout: float = 0) -> int:
        return self.log.end()

    def topic_id(self, timeout: float = 0) -> str | None:
        return self.log.topic_id

    def someone_leads(self, timeout: float = 0) -> bool:
        return self.log.leading


class _Message:
    def __init__(self, offset: int, value: bytes | None = None, error: object = None) -> None:
        self._offset, self._value, self._error = offset, value, error

    def error(self) -> object:
        return self._error

    def value(self) -> bytes | None:
        return self._value

    def offset(self) -> int:
        return self._offset


class FakeLogConsumer:
    """See :class:`FakeEventTopic`; ``assign`` (from the beginning) is recorded."""

    def __init__(self, topic: FakeEventTopic) -> None:
        self.log = topic
        self.position_ = 0
        self.assigned = 0
        self._eof = False

    def assign(self, _partitions: list[object]) -> None:
        self.assigned += 1
        self.position_ = 0
        self._eof = False

    def consume(self, count: int, timeout: float) -> list[_Message]:
        before = self.log.changes
        messages = self._take(count)
        if not messages and timeout > 0:
            with self.log.changed:
                self.log.changed.wait_for(lambda: self.log.changes != before, timeout)
            messages = self._take(count)
        return messages

    def _take(self, count: int) -> list[_Message]:
        if self.log.topic_id is None:
            return [_Message(-1, error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))]
        if self.position_ > self.log.end():
            self.position_ = -1
            return [_Message(-1, error=KafkaError(KafkaError._AUTO_OFFSET_RESET))]  # noqa: SLF001
        if self.position_ < 0:
            return []
        out = [
            _Message(offset, value)
            for offset, value in self.log.records
            if offset >= self.position_
        ][:count]
        if out:
            self.position_ = out[-1].offset() + 2
            self._eof = False
        elif not self._eof:
            self._eof = True
            return [_Message(self.position_, error=KafkaError(KafkaError._PARTITION_EOF))]  # noqa: SLF001
        return out

    def position(self, partitions: list[object]) -> list[object]:
        return [KafkaPartition(self.log.topic, 0, self.position_)]

    def list_topics(self, topic: str | None = None, timeout: float = 0) -> object:
        return SimpleNamespace(topics={})  # what a reader asks only to learn the leader

    def close(self) -> None:
        pass


class FakeLogAdmin:
    """``describe_topics`` of :class:`FakeEventTopic` (answers at once)."""

    def __init__(self, topic: FakeEventTopic) -> None:
        self.log = topic

    def describe_topics(self, _topics: object, request_timeout: float = 0) -> dict[str, object]:
        future: Future[object] = Future()
        if self.log.topic_id is None:
            future.set_exception(KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
        else:
            future.set_result(SimpleNamespace(topic_id=self.log.topic_id))
        return {self.log.topic: future}


@dataclass(frozen=True)
class SelfSigned:
    """A self-signed certificate for tests of TLS listeners, its key, and both as PEM."""

    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @property
    def certificate_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


def self_signed(common_name: str = "localhost") -> SelfSigned:
    """A fresh P-256 key and a certificate for ``common_name`` valid from an hour ago for
    a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return SelfSigned(key, certificate)
