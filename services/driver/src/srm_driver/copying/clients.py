"""Settings of the copy loops' clients: what the configuration says, and what the copy's
guarantees force whatever it says.

The producer of copied records is idempotent (the broker appends a producer's batches of
a partition only in sequence, so with up to 5 requests in flight a remote partition
holds a prefix of what was sent once the producer is closed at its first failure),
waits for every replica (``acks=all``), never lingers, and gives up on a record after
the driver's write timeout, so nothing sent under a lease can land long after it
(docs/design.md). The consumer reads
``read_committed`` (unless configured otherwise), never commits, and never resets a
position by itself: an offset out of range is the driver's decision.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace

from srm_common.config.model import FlowConfig
from srm_common.config.providers import with_placeholders
from srm_common.domain.policy import ORIGIN_HEADER

from srm_driver.shared_target import COPY_HEADER

log = logging.getLogger(__name__)

# Tuning defaults a configuration may override (`<target>.producer.*`, `<source>.consumer.*`).
PRODUCER_DEFAULTS = {
    "batch.size": "262144",
    "buffer.memory": "67108864",
    "max.request.size": "16777216",
}
CONSUMER_DEFAULTS = {
    "max.poll.records": "5000",
    "max.partition.fetch.bytes": "4194304",
    "fetch.max.bytes": "16777216",
    "isolation.level": "read_committed",
}
# What Connect gives MM2's producers unless configured: replacing these is no news.
_CONNECT_DEFAULTS = {
    "delivery.timeout.ms": str(2**31 - 1),
    "max.block.ms": str(2**63 - 1),
    "request.timeout.ms": "30000",
    "max.in.flight.requests.per.connection": "1",
    "acks": "all",
    "linger.ms": "5",
    "enable.idempotence": "false",
}
# Group management is not used (partitions are assigned); these keys would only confuse it,
# and one client id shared by every slot's consumer would clash in JMX.
_CONSUMER_DROPPED = ("group.id", "group.instance.id", "client.id")


@dataclass(frozen=True)
class UnitSettings:
    """What every copy loop of one flow gets (the ``settings`` of a control answer)."""

    consumer: Mapping[str, str]
    producer: Mapping[str, str]
    origin_header: str | None
    copy_header: str | None
    source: str
    target: str
    poll_ms: int
    # Whole record batches passed through (``srm.copy.batches``), and the reservation
    # window they must fit in (``srm.batch.max.records``, at least 1); only sent when on
    # (0 when off).
    batches: bool = False
    window: int = 0

    def __post_init__(self) -> None:
        if self.batches and self.window < 1:
            raise ValueError(
                f"srm.batch.max.records must be >= 1 to copy batches, got {self.window}"
            )

    def to_json(self) -> dict[str, object]:
        settings: dict[str, object] = {
            "consumer": dict(self.consumer),
            "producer": dict(self.producer),
            "origin_header": self.origin_header,
            "copy_header": self.copy_header,
            "source": self.source,
            "target": self.target,
            "poll_ms": self.poll_ms,
        }
        if self.batches:
            settings["batches"] = {"window": self.window}
        return settings


def unit_settings(flow: FlowConfig, *, write_timeout_ms: int) -> UnitSettings:
    """The copy loop settings of ``flow``. Under the identity policy the remote partition
    is the target's own (shared): copies carry the origin and copy headers."""
    shared = flow.keeps_topic_names
    refusal = batch_copy_refusal(flow) if flow.copy_batches else None
    if refusal is not None:
        # The batch copy is the default: a flow that cannot have it is told at INFO,
        # one whose configuration asks for it (and will not get it) at WARNING.
        log.log(
            logging.WARNING if "srm.copy.batches" in flow.written else logging.INFO,
            "%s: copies its records one by one, not whole batches (srm.copy.batches): %s",
            flow.name,
            refusal,
        )
    batches = flow.copy_batches and refusal is None
    return UnitSettings(
        # Secrets from config providers go to the slots as placeholders, which they
        # resolve where they run (docs/security.md).
        consumer=with_placeholders(copier_consumer(flow.source_consumer)),
        producer=with_placeholders(copier_producer(flow.target_producer, write_timeout_ms)),
        origin_header=ORIGIN_HEADER if shared else None,
        copy_header=COPY_HEADER if shared else None,
        source=flow.source,
        target=flow.target,
        poll_ms=flow.idle_wait_ms,
        batches=batches,
        window=flow.batch_max_records if batches else 0,
    )


# SASL logins the slot's own protocol layer speaks (srm_driver.copier.wire.sasl).
_BATCH_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def batch_copy_refusal(flow: FlowConfig) -> str | None:
    """Why ``flow`` cannot pass batches through although ``srm.copy.batches`` asks for it
    (it then copies record by record), or None. Decided per flow, before anything runs: a
    shared target's copies carry origin headers (each record is rewritten), and the
    batch copy's protocol layer logs in with PLAIN and SCRAM only."""
    if flow.keeps_topic_names:
        return "its target is shared (identity policy): each copy carries origin headers"
    for side, keys in (("source", flow.source_consumer), ("target", flow.target_producer)):
        protocol = str(keys.get("security.protocol", "PLAINTEXT")).strip().upper()
        mechanism = str(keys.get("sasl.mechanism", "GSSAPI")).strip().upper()
        if protocol.startswith("SASL_") and mechanism not in _BATCH_MECHANISMS:
            return f"its {side} logs in with SASL {mechanism} (batches speak PLAIN and SCRAM)"
    return None


# Room around the largest record batch a topic allows: the produce request's and the
# fetch response's own headers (topic name, partition, batch header).
REQUEST_OVERHEAD = 65536
# librdkafka refuses a response larger than receive.message.max.bytes (its default).
_RESPONSE_MAX_DEFAULT = 100_000_000


def sized_for_records(settings: UnitSettings, largest: int) -> UnitSettings:
    """``settings`` whose clients carry a record batch of ``largest`` bytes (the largest
    ``max.message.bytes`` among the flow's source topics), so a topic that allows large
    records copies them with no setting by hand. Sizes only grow: the producer's request
    (``max.request.size``) and the consumer's fetch per partition and per request, and
    the response librdkafka accepts (``receive.message.max.bytes``)."""
    if largest <= 0:
        return settings
    needed = largest + REQUEST_OVERHEAD
    producer = dict(settings.producer)
    _at_least(producer, "max.request.size", needed)
    consumer = dict(settings.consumer)
    _at_least(consumer, "max.partition.fetch.bytes", needed)
    _at_least(consumer, "fetch.max.bytes", needed)
    _response_room(consumer)
    if producer == settings.producer and consumer == settings.consumer:
        return settings
    return replace(settings, producer=producer, consumer=consumer)


# What one round trip's fetch must carry so that fetching is not what bounds the copy
# across a WAN: a unit keeps one fetch in flight per source broker, so it moves at most
# fetch.max.bytes per round trip, and a partition max.partition.fetch.bytes.
PARTITION_BYTES_PER_SECOND = 64 * 1024 * 1024
CONNECTION_BYTES_PER_SECOND = 256 * 1024 * 1024


def sized_for_round_trip(settings: UnitSettings, round_trip_ms: int) -> UnitSettings:
    """``settings`` whose fetches carry 64 MiB/s a partition and 256 MiB/s a unit and
    broker at ``round_trip_ms`` (more than a slot copies): from about 60 ms on, the fetch
    sizes grow with the round trip; below, the defaults already carry that. Sizes only
    grow (design.md section 3c)."""
    if round_trip_ms <= 0:
        return settings
    consumer = dict(settings.consumer)
    _at_least(consumer, "max.partition.fetch.bytes",
              PARTITION_BYTES_PER_SECOND * round_trip_ms // 1000)  # fmt: skip
    _at_least(consumer, "fetch.max.bytes", CONNECTION_BYTES_PER_SECOND * round_trip_ms // 1000)
    _response_room(consumer)
    if consumer == settings.consumer:
        return settings
    return replace(settings, consumer=consumer)


def _response_room(consumer: dict[str, str]) -> None:
    """librdkafka refuses a fetch.max.bytes within 512 bytes of the largest response it
    accepts (100 MB by default): raise that with it."""
    fetch_max = consumer.get("fetch.max.bytes", "")
    if fetch_max.isdigit() and int(fetch_max) + REQUEST_OVERHEAD > _RESPONSE_MAX_DEFAULT:
        _at_least(consumer, "receive.message.max.bytes", int(fetch_max) + REQUEST_OVERHEAD)


def _at_least(config: dict[str, str], key: str, size: int) -> None:
    try:
        current = int(config.get(key, "0"))
    except ValueError:
        return  # a config provider's placeholder: the operator's value stands
    if current < size:
        config[key] = str(size)


def copier_producer(target_producer: Mapping[str, str], write_timeout_ms: int) -> dict[str, str]:
    """The copied records' producer config (see the module docstring)."""
    config = {**PRODUCER_DEFAULTS, **target_producer}
    forced = {
        "enable.idempotence": "true",
        "acks": "all",
        "max.in.flight.requests.per.connection": "5",
        "linger.ms": "0",
        "delivery.timeout.ms": str(write_timeout_ms),
        # A send blocked on metadata or a full buffer waits this long before the delivery
        # timeout starts; the leader waits it out too (ControlSettings.max_block_ms).
        "max.block.ms": str(min(1000, write_timeout_ms // 4)),
    }
    request_timeout = min(int(config.get("request.timeout.ms", "30000")), write_timeout_ms // 2)
    forced["request.timeout.ms"] = str(request_timeout)
    for key, value in forced.items():
        given = target_producer.get(key)
        if given is not None and given != value and given != _CONNECT_DEFAULTS.get(key):
            log.warning("%s = %s is replaced by %s for copied records", key, given, value)
    config.update(forced)
    return config


def copier_consumer(source_consumer: Mapping[str, str]) -> dict[str, str]:
    """The source consumer of a copy loop (see the module docstring)."""
    config = {**CONSUMER_DEFAULTS, **source_consumer}
    for key in _CONSUMER_DROPPED:
        config.pop(key, None)
    config.update({"enable.auto.commit": "false", "auto.offset.reset": "none"})
    return config
