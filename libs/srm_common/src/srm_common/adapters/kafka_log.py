"""The event logs and driver heartbeats on Kafka (confluent-kafka), one set per log
(:class:`~srm_common.config.control.ControlSettings`: a target cluster's, or the single
log of an earlier release).

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

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupState,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec, ResourceType

from srm_common.adapters import kafka_clients
from srm_common.adapters.topic_ids import checked_topic_id
from srm_common.config.control import ControlSettings
from srm_common.control.beats import Beat
from srm_common.control.events import Envelope, encode, event_key
from srm_common.control.integrity import RESTORE_HINT, LogGuard, LogProblem, restore_hint
from srm_common.errors import ControlLogError, ControlTopicRefused, Fenced

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0


def ensure_control_topics(
    settings: ControlSettings, *, create_events: bool = True, timeout: float = TIMEOUT_S
) -> list[str]:
    """Create the event log (kept forever), heartbeats (an hour) and election topics that
    are missing, then check all three (:func:`check_control_topics`); its warnings.

    ``create_events=False``: a missing event log is left missing (a coordinator that knew
    a log must report it lost, never start an empty one in its place)."""
    admin = kafka_clients.admin(dict(settings.client))
    wanted = {
        settings.events_topic: {"retention.ms": "-1", "retention.bytes": "-1"},
        settings.drivers_topic: {"retention.ms": "3600000"},
        settings.election_topic: {"retention.ms": "3600000"},
    }
    try:
        existing = set(admin.list_topics(timeout=timeout).topics)
    except KafkaException as exc:
        raise ControlLogError(
            f"cannot reach cluster {settings.cluster!r}"
            f" ({settings.client.get('bootstrap.servers')}) for the log of {settings.name}:"
            f" {exc}; is it running?"
        ) from exc
    if not create_events and settings.events_topic not in existing:
        del wanted[settings.events_topic]
    new = [
        NewTopic(name, 1, settings.replication_factor, config=config)
        for name, config in wanted.items()
        if name not in existing
    ]
    for name, future in (admin.create_topics(new, request_timeout=timeout) if new else {}).items():
        try:
            future.result(timeout)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise ControlLogError(f"cannot create control topic {name}: {exc}") from exc
    deadline = time.monotonic() + timeout
    while new and time.monotonic() < deadline:
        topics = admin.list_topics(timeout=timeout).topics
        if all(
            name in topics and topics[name].partitions and topics[name].partitions[0].leader >= 0
            for name in wanted
        ):
            break
        time.sleep(0.1)
    else:
        if new:
            raise ControlLogError(f"control topics on {settings.cluster!r} have no leader yet")
    return check_control_topics(settings, admin=admin, timeout=timeout)


def check_control_topics(
    settings: ControlSettings, *, admin: AdminClient | None = None, timeout: float = TIMEOUT_S
) -> list[str]:
    """Refuse control topics that exist in a shape the control path cannot work with,
    with :class:`ControlTopicRefused` saying how to fix it (:class:`ControlLogError` when
    the cluster does not answer); return warnings (a replication
    factor below ``srm.control.replication.factor``). Missing topics pass (a coordinator
    creates them).

    * every one must have one partition: the election's second partition elects a second
      leader; events and heartbeats are read from partition 0 only.
    * the event log must be ``cleanup.policy=delete`` with ``retention.ms`` and
      ``retention.bytes`` -1 (as created): compaction or retention deletes history that
      every state is folded from.
    """
    admin = admin or kafka_clients.admin(dict(settings.client))
    servers = settings.client.get("bootstrap.servers", "HOST:PORT")
    names = [settings.events_topic, settings.drivers_topic, settings.election_topic]
    found = {}
    for name, future in admin.describe_topics(
        TopicCollection(names), request_timeout=timeout
    ).items():
        try:
            found[name] = future.result(timeout)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise ControlLogError(f"cannot describe control topic {name}: {exc}") from exc
    delete = f"kafka-topics.sh --bootstrap-server {servers} --delete --topic"
    why = {
        settings.events_topic: "events of one log are read in order from partition 0 only;"
        " this topic cannot be shrunk: rebuild it with one partition by"
        f" `srm-control restore --target {settings.cluster} --from-db URL --replace` (the"
        " gateway's read model) or use a new srm.control.topic.prefix",
        settings.drivers_topic: "heartbeats are read from partition 0 only, so drivers"
        " beating to another one would be removed as silent; it holds only the last hour"
        f" of heartbeats: delete it ({delete} {settings.drivers_topic}) and start a"
        " coordinator, which creates it with one partition",
        settings.election_topic: "each partition elects a coordinator, so two partitions"
        f" make two leaders; it holds no data: delete it ({delete}"
        f" {settings.election_topic}) and start a coordinator, which creates it with one"
        " partition",
    }
    warnings = []
    for name, description in found.items():
        partitions = len(description.partitions)
        if partitions != 1:
            raise ControlTopicRefused(
                f"control topic {name} has {partitions} partitions, not 1: {why[name]}"
            )
        replicas = len(description.partitions[0].replicas)
        if 0 < replicas < settings.replication_factor:
            warnings.append(
                f"control topic {name} has replication factor {replicas}, below"
                f" srm.control.replication.factor = {settings.replication_factor}: losing one"
                " broker may lose it; raise it with kafka-reassign-partitions.sh"
            )
    if settings.events_topic in found:
        _check_log_configs(admin, settings.events_topic, servers, timeout)
    for line in warnings:
        log.warning("%s", line)
    return warnings


def _check_log_configs(admin: AdminClient, topic: str, servers: str, timeout: float) -> None:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    try:
        configs = admin.describe_configs([resource], request_timeout=timeout)[resource].result(
            timeout
        )
    except KafkaException as exc:
        raise ControlLogError(f"cannot read the configs of control topic {topic}: {exc}") from exc
    wanted = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
    wrong = {
        key: configs[key].value
        for key, value in wanted.items()
        if key in configs and configs[key].value != value
    }
    if wrong:
        now = ", ".join(f"{key}={value}" for key, value in wrong.items())
        fix = ",".join(f"{key}={wanted[key]}" for key in wrong)
        raise ControlTopicRefused(
            f"the event log topic {topic} has {now}: compaction or retention would delete"
            " events every state is folded from; set them as SRM creates them:"
            f" kafka-configs.sh --bootstrap-server {servers} --alter --entity-type topics"
            f" --entity-name {topic} --add-config {fix} (if records were deleted already, the"
            f" log is lost: {RESTORE_HINT})"
        )


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


_UNKNOWN = "?"  # a topic id that could not be learnt this time (no answer)


class EventLogReader:
    """Reads the event log from the beginning, committed events only, through a
    :class:`LogGuard` (:mod:`srm_common.control.integrity`).

    A record that is not an event is skipped and logged with its offset. When the guard
    finds the log lost or an event of a newer SRM, :attr:`problem` says so and nothing
    more is returned. A lost log is looked at again (when the topic id changes, else every
    ``PROBE_S``): a log that restores the lost one is read from its start, ``restarted``
    is set (the caller starts from an empty state) and :attr:`problem` clears.

    ``known_log``: the identity the log must show before anything is returned (the module
    docstring of integrity). ``consumer``/``admin``: for tests; built from ``settings``
    otherwise.
    """

    CHECK_S = 1.0  # how often the topic id is looked at
    PROBE_S = 5.0  # how often a lost log is read again to see whether it was restored

    def __init__(
        self,
        settings: ControlSettings,
        *,
        client_id: str,
        known_log: str | None = None,
        consumer: Consumer | None = None,
        admin: AdminClient | None = None,
    ) -> None:
        self.topic = settings.events_topic
        self.cluster = settings.cluster
        # The target named in a restore hint (none for the single log of an earlier release).
        self._target = "" if settings.legacy else settings.cluster
        self._consumer = consumer or kafka_clients.consumer(
            {
                **settings.client,
                "client.id": client_id,
                "group.id": f"{settings.prefix}.reader.{client_id}",
                "enable.auto.commit": "false",
                "isolation.level": "read_committed",
                "enable.partition.eof": "true",
                # A position beyond the end (the topic was recreated or truncated) is an
                # error to report, not a silent jump to another place in the log.
                "auto.offset.reset": "error",
            }
        )
        self._admin = admin or kafka_clients.admin(dict(settings.client))
        self.guard = LogGuard(self.topic, known_log=known_log, cluster=self._target)
        self.problem: LogProblem | None = None
        self.restarted = False
        self.missing = False
        self.at_end = False
        # The next offset this reader will read (-1 before it has read anything).
        self.position = -1
        self._carried: list[Envelope] = []
        self._held: list[Envelope] = []
        self._described: Future[object] | None = None
        self._next_check = 0.0
        self._missing = 0
        self._probing = False
        self._lost_known: str | None = None
        self._probed: tuple[str | None, float] = (None, 0.0)
        self._consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])

    @property
    def topic_id(self) -> str | None:
        return self.guard.topic_id

    @property
    def log_id(self) -> str | None:
        return self.guard.log_id

    def take_restart(self) -> bool:
        """True once after a restored log was taken up: fold its events onto an empty
        state (they are returned from its first one)."""
        restarted, self.restarted = self.restarted, False
        return restarted

    def status(self) -> dict[str, object]:
        """For REST: the log's identity, any problem, records skipped (with offsets)."""
        guard = self.guard
        return {
            "topic": self.topic,
            "topic_id": guard.topic_id,
            "log_id": guard.log_id,
            "problem": None if self.problem is None else self.problem.message,
            "problem_kind": None if self.problem is None else self.problem.kind,
            "skipped": guard.skipped_count,
            "skipped_recent": [
                {"at": guard.where(s.offset), "reason": s.reason} for s in guard.skipped
            ],
        }

    def poll(self, timeout: float = 0.2, *, max_events: int = 1000) -> list[Envelope]:
        """New committed events (maybe none); sets ``at_end`` when caught up.

        A read error is raised after the whole batch is decoded, and the batch's events
        are returned by the next call: the consumer's position is already past them, so
        dropping them would leave a gap in every state folded from this reader."""
        self._watch_topic()
        if self.problem is not None and not self._probing:
            time.sleep(timeout)  # nothing is read until the log comes back
            return []
        events, self._carried = self._carried, []
        failure: ControlLogError | None = None
        for message in self._consumer.consume(max_events, timeout):
            error = message.error()
            if error is not None:
                code = error.code()
                if code == KafkaError._PARTITION_EOF:  # noqa: SLF001
                    self.at_end = True
                    self.guard.reached_end()
                elif code == KafkaError._AUTO_OFFSET_RESET and self._probing:  # noqa: SLF001
                    pass  # of the position before the probe, which reads from the start
                elif code == KafkaError._AUTO_OFFSET_RESET:  # noqa: SLF001
                    self.guard.lose(
                        "the reader's position is past the end of the log (the topic was"
                        " recreated or truncated)"
                    )
                elif failure is None:
                    failure = ControlLogError(f"cannot read the event log {self.topic}: {error}")
                continue
            self.at_end = False
            skipped = self.guard.skipped_count
            envelope = self.guard.record(message.offset(), message.value())
            if envelope is not None:
                events.append(envelope)
            elif self.guard.skipped_count != skipped:
                last = self.guard.skipped[-1]
                log.warning(
                    "skipped the record at %s: %s", self.guard.where(last.offset), last.reason
                )
        events = self._settle(events)
        if failure is not None:
            self._carried = events
            raise failure
        self._update_position()
        return events

    def _settle(self, events: list[Envelope]) -> list[Envelope]:
        """What of ``events`` may be folded, given the guard's verdicts so far."""
        guard = self.guard
        if guard.problem is None and not guard.confirmed:
            self._held.extend(events)  # the identity is not shown yet
            return []
        if guard.confirmed:
            events, self._held = self._held + events, []
        if guard.problem is not None:
            self._held = []
            if self._probing:
                self._probing = False
                kind = self.problem.kind if self.problem else "lost"
                self.problem = LogProblem(kind, guard.problem.message, guard.problem.offset)
                log.warning("%s (looked again: not restored)", guard.problem.message)
                return []
            if self.problem is None:
                self.problem = guard.problem
                if guard.problem.kind == "lost":
                    self._lost_known = guard.log_id or ("" if guard.events else None)
                log.error("%s", guard.problem.message)
            # Events before the problem are of the log the reader knew.
            return events if guard.confirmed else []
        if self._probing:
            self._probing = False
            self.problem = None
            self.restarted = True
            log.warning(
                "event log %s on topic %s restores the lost one: reading it from its start",
                guard.log_id,
                guard.topic_id,
            )
        return events

    def _watch_topic(self) -> None:
        """Look at the topic id every CHECK_S without blocking (the answer is taken up
        on a later call); a lost log is read again when it may have been restored."""
        now = time.monotonic()
        pending = self._described
        if pending is not None:
            if not pending.done():
                return
            self._described = None
            self._seen(_topic_id_of(pending, self.topic), now)
        if now >= self._next_check:
            self._next_check = now + self.CHECK_S
            try:
                futures = self._admin.describe_topics(
                    TopicCollection([self.topic]), request_timeout=5
                )
                self._described = futures[self.topic]
            except KafkaException:
                self._described = None

    def _seen(self, topic_id: str | None, now: float) -> None:
        if topic_id == _UNKNOWN:
            return
        if topic_id is None:
            # Twice, a few seconds apart: a broker that has just created the topic may
            # not know it yet.
            self._missing += 1
            if self._missing < 2 or (self.problem is not None and not self._probing):
                return
        else:
            self._missing = 0
        last_topic, last_time = self._probed
        if self._probing and now - last_time > 3 * self.PROBE_S:
            self._probing = False  # that probe never reached the end: look again
        if self.problem is not None and self.problem.kind == "lost" and not self._probing:
            if topic_id is not None and (topic_id != last_topic or now - last_time > self.PROBE_S):
                self._probe(topic_id, now)
            return
        self.guard.topic_seen(topic_id)
        self._settle([])

    def _probe(self, topic_id: str, now: float) -> None:
        """Read the topic from its start again: does it hold a restore of the lost log?"""
        self._probed = (topic_id, now)
        self._probing = True
        self.guard = LogGuard(self.topic, known_log=self._lost_known, cluster=self._target)
        self.guard.topic_seen(topic_id)
        self._held, self._carried = [], []
        self.at_end = False
        self.position = -1
        self._consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])

    def check_topic(self, timeout: float) -> bool:
        """Look at the topic now (blocking); False when it does not exist and this reader
        knows no log yet (nothing to read; a coordinator creates it)."""
        topic_id = _describe(self._admin, self.topic, timeout)
        if topic_id is None and self.guard.known_log is None and self.guard.topic_id is None:
            return False
        if topic_id != _UNKNOWN:
            self.guard.topic_seen(topic_id)
            self._settle([])
        return True

    def _update_position(self) -> None:
        try:
            (where,) = self._consumer.position([TopicPartition(self.topic, 0)])
        except KafkaException:
            return
        if where.offset >= 0:
            self.position = where.offset

    def read_to_end(
        self, timeout: float = TIMEOUT_S, *, missing_ok: bool = False
    ) -> list[Envelope]:
        """Everything committed so far; :class:`ControlLogError` if the end is not reached.
        Stops early, returning what may be folded, when :attr:`problem` is set.
        ``missing_ok``: a log whose topic does not exist (and that this reader knew
        nothing of) is empty at once (:attr:`missing` set), not waited for.

        Only on a new reader: librdkafka signals a partition's end once per arrival
        there, so a reader already at the end would wait for news forever."""
        deadline = time.monotonic() + timeout
        events: list[Envelope] = []
        self.at_end = False
        while not self.check_topic(min(timeout, 10.0)):
            if missing_ok:
                self.missing = True
                return []
            if time.monotonic() > deadline:
                raise ControlLogError(
                    f"the event log {self.topic} does not exist on {self.cluster}: no"
                    " coordinator has led it with this srm.control.topic.prefix yet (start"
                    f" srm-coordinator), or it was deleted ({restore_hint(self._target)})"
                )
            time.sleep(0.2)
        while not self.at_end and self.problem is None:
            if time.monotonic() > deadline:
                raise ControlLogError(
                    f"could not read the event log {self.topic} on {self.cluster} to its end"
                    f" within {timeout:.0f} s; is {self.cluster} up?"
                )
            events.extend(self.poll(0.5))
        return events

    def close(self) -> None:
        self._consumer.close()


def _describe(admin: AdminClient, topic: str, timeout: float) -> str | None:
    """The topic id of ``topic`` now (blocking); see :func:`_topic_id_of`."""
    try:
        future = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout)[topic]
        future.exception(timeout)
    except (KafkaException, FutureTimeout):
        return _UNKNOWN
    return _topic_id_of(future, topic)


def _topic_id_of(future: Future[object], topic: str) -> str | None:
    """The topic id a describe_topics future holds; None: no such topic; _UNKNOWN: no
    answer that says either."""
    try:
        description = future.result(0)
    except KafkaException as exc:
        if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        return _UNKNOWN
    except Exception:  # noqa: BLE001 - a timeout or a cancelled request: no answer
        return _UNKNOWN
    return checked_topic_id(topic, str(description.topic_id))  # type: ignore[attr-defined]


class EventLogEnd:
    """Where the committed event log ends now (its last stable offset), which topic holds
    it (its topic id), and whether a coordinator holds the election: for a driver
    confirming that it has read every decision made before a moment."""

    def __init__(self, settings: ControlSettings) -> None:
        self.topic = settings.events_topic
        self.election_topic = settings.election_topic
        self.election_group = settings.election_group
        self._admin = kafka_clients.admin(dict(settings.client))

    def query(self, timeout: float = 5.0) -> int:
        """The end offset; :class:`ControlLogError` if the log's cluster did not answer."""
        request = {TopicPartition(self.topic, 0): OffsetSpec.latest()}
        try:
            futures = self._admin.list_offsets(
                request, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout
            )
            return int(next(iter(futures.values())).result(timeout).offset)
        except (KafkaException, FutureTimeout) as exc:
            raise ControlLogError(f"cannot read where the event log ends: {exc}") from exc

    def topic_id(self, timeout: float = 5.0) -> str | None:
        """The events topic's id now; None when it does not exist; ControlLogError when
        the log's cluster did not say."""
        topic_id = _describe(self._admin, self.topic, timeout)
        if topic_id == _UNKNOWN:
            raise ControlLogError("cannot describe the event log topic")
        return topic_id

    def someone_leads(self, timeout: float = 5.0) -> bool:
        """Whether a coordinator may lead now: a member of the election group holds the
        election partition, or the group is between assignments (True when unsure)."""
        try:
            group = (
                self._admin.describe_consumer_groups(
                    [self.election_group], request_timeout=timeout
                )[self.election_group]
            ).result(timeout)
        except (KafkaException, FutureTimeout):
            return True
        if group.state in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD):
            return False
        if group.state != ConsumerGroupState.STABLE:
            return True
        return any(
            tp.topic == self.election_topic
            for member in group.members
            for tp in (member.assignment.topic_partitions if member.assignment else [])
        )


def read_log(
    settings: ControlSettings,
    *,
    timeout: float = TIMEOUT_S,
    known_log: str | None = None,
    missing_ok: bool = False,
) -> list[Envelope]:
    """The whole committed event log (for srm-control and tests); records that are not
    events are skipped (and logged). :class:`ControlLogError` with the reason when the
    log is not the ``known_log`` or holds an event of a newer SRM. ``missing_ok``: a log
    whose topic does not exist is empty, at once."""
    reader = EventLogReader(
        settings, client_id=f"srm-log-reader-{time.time_ns()}", known_log=known_log
    )
    try:
        events = reader.read_to_end(timeout, missing_ok=missing_ok)
        if reader.problem is not None:
            raise ControlLogError(reader.problem.message)
        return events
    finally:
        reader.close()


def read_logs(
    logs: Sequence[ControlSettings], *, timeout: float = TIMEOUT_S
) -> dict[str, list[Envelope] | ControlLogError]:
    """Every log of ``logs`` read at once (one thread each: a cluster that does not
    answer costs one timeout, not one per log), by log name; a log that could not be
    read is the :class:`ControlLogError` that says why; a log whose topic does not exist
    (nothing ever led it, or the single log of an earlier release never was) is left
    out of the answer."""
    found: dict[str, list[Envelope] | ControlLogError] = {}
    missing: set[str] = set()

    def read(settings: ControlSettings) -> None:
        try:
            reader = EventLogReader(settings, client_id=f"srm-log-reader-{time.time_ns()}")
            try:
                events = reader.read_to_end(timeout, missing_ok=True)
                if reader.problem is not None:
                    raise ControlLogError(reader.problem.message)
                if reader.missing:
                    missing.add(settings.name)
                else:
                    found[settings.name] = events
            finally:
                reader.close()
        except ControlLogError as exc:
            found[settings.name] = exc

    threads = [
        threading.Thread(target=read, args=(settings,), name=f"read {settings.name}", daemon=True)
        for settings in logs
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout + 15)
    for settings in logs:
        if settings.name not in found and settings.name not in missing:
            found[settings.name] = ControlLogError(
                f"the log of {settings.name} was not read in time; is {settings.cluster} up?"
            )
    return found


# -- driver heartbeats -----------------------------------------------------------------


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
