"""The control topics of one log (:class:`~srm_common.config.control.ControlSettings`):
the event log (kept forever), driver heartbeats and the election topic. Created when
missing and checked (:func:`ensure_control_topics`, :func:`check_control_topics`); an
event log that compaction or retention would shorten is refused.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import (
    KafkaError,
    KafkaException,
    TopicCollection,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from srm_common.adapters import kafka_clients
from srm_common.config.control import ControlSettings
from srm_common.control.integrity import RESTORE_HINT
from srm_common.errors import ControlLogError, ControlTopicRefused

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
