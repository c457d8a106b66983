"""A unit's librdkafka clients, from the settings of the driver's answer.

The answer carries the clients' keys as the configuration writes them (Java names; a
value a config provider resolved travels as its placeholder, docs/security.md). Here,
where the client runs, placeholders are resolved and the keys are translated by the
project's one translation place, :mod:`srm_common.adapters.kafka_clients` (tuning keys
and security: stores become PEM files of this process).

What the copy's guarantees need from librdkafka beyond the driver's forced keys
(``srm_driver.copying.clients``): the producer's gap-less guarantee (a failure that
could leave a hole in a remote partition stops the producer at once, before anything
queued behind the failed record can land), and a consumer that never
commits, never stores offsets and never reports a partition's end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, Producer
from srm_common.adapters import kafka_clients
from srm_common.config.providers import resolve_client_keys
from srm_common.config.security import read_security
from srm_common.redaction import remember_config_secrets
from srm_common.required_acls_grant import READER_GROUP

from srm_driver.copier.wire import sasl
from srm_driver.copier.wire.cluster import Cluster
from srm_driver.copier.wire.pump import Pump

LIBRDKAFKA_LOG = logging.getLogger("srm.copier.librdkafka")
LINGER_MS = 1


class _GaplessNotes(logging.Filter):
    """librdkafka warns at every producer start that the gap-less guarantee is
    'experimental' (it is what the copy relies on: docs/design.md, section 3), and logs
    the stop the guarantee causes as FATAL. That stop is the unit's failure, which the
    driver reports (and halts a poison record's partition for): here it is INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if "enable.gapless.guarantee is experimental" in text:
            return False
        if "Gap-less ordering would not be guaranteed" in text:
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


LIBRDKAFKA_LOG.addFilter(_GaplessNotes())


def _keys(settings: Mapping[str, str]) -> dict[str, Any]:
    keys = resolve_client_keys(settings)
    remember_config_secrets(keys)
    return kafka_clients.java_tuning(keys)


def wire_cluster(settings: Mapping[str, str], pump: Pump, timeout: float) -> Cluster:
    """A cluster of the slot's own protocol layer (the batch copy,
    :mod:`srm_driver.copier.batch_unit`) from a client's settings: its bootstrap servers,
    TLS context and SASL login (PLAIN or SCRAM; the driver copies a flow whose clusters
    use another mechanism record by record, ``copying.clients.batch_copy_refusal``)."""
    keys = resolve_client_keys(settings)
    remember_config_secrets(keys)
    security = read_security(keys)
    login = None
    if security.mechanism is not None:
        login = sasl.Sasl(security.mechanism, security.username or "", security.password or "")
    return Cluster(
        keys["bootstrap.servers"],
        client_id=str(keys.get("client.id") or "srm-copy-batches"),
        ssl_context=kafka_clients.ssl_context(keys),
        login=login,
        timeout=timeout,
        pump=pump,
    )


def size_of(settings: Mapping[str, str], key: str, default: int) -> int:
    """A size setting as a number (a config provider's placeholder: ``default``)."""
    try:
        return int(settings.get(key, default))
    except ValueError:
        return default


def max_poll_records(settings: Mapping[str, str]) -> int:
    """How many records one consume() may return (the Java consumer's key)."""
    try:
        return max(1, int(settings.get("max.poll.records", "500")))
    except ValueError:
        return 500


def consumer(settings: Mapping[str, str]) -> Consumer:
    """The unit's source consumer (assigned partitions only)."""
    return kafka_clients.consumer(
        _keys(settings),
        **{
            # librdkafka wants a group id; nothing is committed, the group is only
            # looked up (srm_common.required_acls grants DESCRIBE on it).
            "group.id": READER_GROUP,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            "logger": LIBRDKAFKA_LOG,
        },
    )


def producer(settings: Mapping[str, str], delivered: Callable[[Any, Any], None]) -> Producer:
    """The unit's producer of copies; ``delivered(error, message)`` is called for every
    record, inside ``poll()`` on the calling thread."""
    return kafka_clients.producer(
        _keys(settings),
        **{
            "enable.gapless.guarantee": True,
            # librdkafka sends a ProduceRequest per partition batch, at most 5 in flight:
            # without lingering, every record of a poll starts a batch of its own while
            # the in-flight slots are taken. 1 ms lets a poll's records share batches.
            # The fence is unchanged: message.timeout.ms (the write timeout) counts from
            # produce(), lingering included.
            "linger.ms": LINGER_MS,
            "on_delivery": delivered,
            "logger": LIBRDKAFKA_LOG,
        },
    )
