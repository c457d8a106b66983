"""The event log read read_committed (confluent-kafka), so nothing an old leader wrote
without committing is ever seen, by a coordinator, a driver or srm-control; and the
events topic's id, which tells a lost or recreated log from the one that was read.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from srm_common.adapters import answering, kafka_clients
from srm_common.adapters.control_topics import TIMEOUT_S
from srm_common.adapters.topic_ids import checked_topic_id
from srm_common.config.control import ControlSettings
from srm_common.control.events import Envelope
from srm_common.control.integrity import LogGuard, LogProblem, restore_hint
from srm_common.errors import ControlLogError

log = logging.getLogger(__name__)


UNKNOWN_TOPIC_ID = "?"  # a topic id that could not be learnt this time (no answer)


READ_STEP_S = 0.05
"""How long each poll of a read to the end lasts. librdkafka's consume() returns when its
batch is full or its timeout is over, so a poll of a log shorter than a batch lasts its
whole timeout, and the events and the partition's end come in two polls or more: in
polls this short a read ends about when the end arrives (in 0.5 s ones, a one-shot read
took 1 to 1.5 s however short the log)."""

ONE_SHOT_FETCH = {"fetch.wait.max.ms": "50"}
"""A one-shot reader's consumer keys: the end of a partition shows when a fetch comes
back empty, after the broker held it ``fetch.wait.max.ms`` (librdkafka's 500 by default,
right for a follower: an idle log fetched twice a second)."""


class EventLogReader:
    """Reads the event log from the beginning, committed events only, through a
    :class:`LogGuard` (:mod:`srm_common.control.integrity`).

    A record that is not an event is skipped and logged with its offset. When the guard
    finds the log lost or an event of a newer SRM, :attr:`problem` says so and nothing
    more is returned. A lost log is looked at again (when the topic id changes, else every
    ``PROBE_S``): a log that restores the lost one is read from its start, ``restarted``
    is set (the caller starts from an empty state) and :attr:`problem` clears.

    ``known_log``: the identity the log must show before anything is returned (the module
    docstring of integrity). ``one_shot``: a reader that reads to the end once and closes
    (:data:`ONE_SHOT_FETCH`). ``consumer``/``admin``: for tests; built from ``settings``
    otherwise.

    One class of about 280 lines: reading, the watch of the topic's id and the probe of a
    lost log share the consumer's position, the guard and the events held back until the
    log's identity shows (a probe swaps the guard and rewinds the consumer under a
    ``poll``); apart, each would reach into the others' state.
    """

    CHECK_S = 1.0  # how often the topic id is looked at
    PROBE_S = 5.0  # how often a lost log is read again to see whether it was restored

    def __init__(
        self,
        settings: ControlSettings,
        *,
        client_id: str,
        known_log: str | None = None,
        one_shot: bool = False,
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
                **(ONE_SHOT_FETCH if one_shot else {}),
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
            answering.noted(self._admin, pending.exception())
            self._seen(topic_id_of(pending, self.topic), now)
        if now >= self._next_check:
            self._next_check = now + self.CHECK_S
            try:
                answering.check(self._admin, self.topic, self.CHECK_S)  # a dead cluster
                futures = self._admin.describe_topics(
                    TopicCollection([self.topic]), request_timeout=5
                )
                self._described = futures[self.topic]
            except KafkaException:
                self._described = None

    def _seen(self, topic_id: str | None, now: float) -> None:
        if topic_id == UNKNOWN_TOPIC_ID:
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
        topic_id = describe_topic_id(self._admin, self.topic, timeout)
        if topic_id is None and self.guard.known_log is None and self.guard.topic_id is None:
            return False
        if topic_id != UNKNOWN_TOPIC_ID:
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
        if self.position < 0 and not self._probing:
            left = max(0.0, deadline - time.monotonic())
            assign_knowing_the_leader(self._consumer, self.topic, min(left, 10.0))
        while not self.at_end and self.problem is None:
            if time.monotonic() > deadline:
                raise ControlLogError(
                    f"could not read the event log {self.topic} on {self.cluster} to its end"
                    f" within {timeout:.0f} s; is {self.cluster} up?"
                )
            events.extend(self.poll(READ_STEP_S))
        return events

    def close(self) -> None:
        self._consumer.close()


def assign_knowing_the_leader(consumer: Consumer, topic: str, timeout: float) -> None:
    """Assign the log (again) from its start once ``consumer`` knows the partition's
    leader: assigned before, librdkafka asks where the log begins only when a 500 ms retry
    timer fires."""
    try:
        consumer.list_topics(topic, timeout=timeout)
    except KafkaException:
        return  # the reads that follow say what is wrong
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])


def describe_topic_id(admin: AdminClient, topic: str, timeout: float) -> str | None:
    """The topic id of ``topic`` now (blocking); see :func:`topic_id_of`."""
    try:
        answering.check(admin, topic, timeout)
        future = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout)[topic]
        answering.noted(admin, future.exception(timeout))
    except (KafkaException, FutureTimeout) as exc:
        answering.noted(admin, exc)
        return UNKNOWN_TOPIC_ID
    return topic_id_of(future, topic)


def topic_id_of(future: Future[object], topic: str) -> str | None:
    """The topic id a describe_topics future holds; None: no such topic; UNKNOWN_TOPIC_ID: no
    answer that says either."""
    try:
        description = future.result(0)
    except KafkaException as exc:
        if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        return UNKNOWN_TOPIC_ID
    except Exception:  # noqa: BLE001 - a timeout or a cancelled request: no answer
        return UNKNOWN_TOPIC_ID
    return checked_topic_id(topic, str(description.topic_id))  # type: ignore[attr-defined]
