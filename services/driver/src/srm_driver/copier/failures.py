"""librdkafka's errors as the control protocol's failure kinds.

``poison``: the target refuses this record and would refuse it again (too large, a
timestamp the topic refuses, a record it calls invalid, a malformed origin header): it
counts a try against its offset, and after ``srm.poison.max.tries`` its partition halts.
``transient``: anything else (a broker down, a timeout, authorization, a fenced or
failed producer): retried with a backoff, never a halt. ``conflict`` (an acknowledged
offset other than the planned one), ``lease`` and ``out_of_range`` are decided by the
copy loop itself.

A producer whose gap-less guarantee stopped it reports a fatal error whose code is
``_GAPLESS_GUARANTEE`` and whose text names the broker's error
(``ProduceRequest for t [0] with 1 message(s) failed: Broker: Message size too large``);
:func:`fatal_kind` reads the kind from that text.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError

from srm_driver.copier.wire.errors import BrokerError

POISON_CODES = frozenset(
    {
        KafkaError.MSG_SIZE_TOO_LARGE,  # the broker's or our own message.max.bytes
        KafkaError.INVALID_TIMESTAMP,  # message.timestamp.*.max.ms of the topic
        KafkaError.INVALID_RECORD,  # the broker's record validation (e.g. compaction, no key)
        KafkaError.RECORD_LIST_TOO_LARGE,
        KafkaError._INVALID_ARG,  # produce() refused the record's fields
    }
)


# The same refusals as Kafka error codes, as a Produce answer of the slot's own protocol
# layer gives them (srm_driver.copier.wire.errors): CORRUPT_MESSAGE (a batch the broker
# cannot read: it would refuse it again), MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE,
# INVALID_TIMESTAMP, INVALID_RECORD.
WIRE_POISON_CODES = frozenset({2, 10, 18, 32, 87})


def wire_kind(code: int) -> str:
    """``poison`` or ``transient`` for a Kafka error code in a Produce answer."""
    return "poison" if code in WIRE_POISON_CODES else "transient"


# The class of a batch the batch copy cannot pass through; the driver halts its partition
# with the slot's sentence alone, which names the batch and the way out (batch_rules.py).
NOT_PASSED_THROUGH = "BatchNotPassedThrough"


def too_large(value_bytes: int) -> str:
    """What is said after a too-large refusal of one record, on either copy path."""
    return (
        f" (the target refused a record whose value is {value_bytes:,} bytes:"
        " the remote topic's max.message.bytes is lower)"
    )


def conflict(remote: str, partition: int, up: int, offset: int, expected: int) -> str:
    """What a copy acknowledged where the plan does not say means."""
    return (
        f"remote partition {remote}-{partition} took upstream offset {up} at offset {offset}"
        f" where offset {expected} was planned: something else writes to it"
    )


# Kafka error codes of a refused authorization, as a target's answer gives them to the
# batch copy (which has no transactional id): TOPIC_AUTHORIZATION_FAILED (Metadata,
# Produce) and CLUSTER_AUTHORIZATION_FAILED (InitProducerId without IdempotentWrite).
WIRE_AUTHORIZATION_CODES = frozenset({29, 31})


def on_target(alias: str, error: object) -> str:
    """A failure talking to the target cluster ``alias`` (the batch copy's own protocol
    layer), and what to check: its ACLs when a broker refused an authorization, the way
    to its brokers when none answered (a connection, a timeout, bad bootstrap servers);
    another error code a broker answered with is said as it is."""
    said = f"writing to target cluster {alias!r}: {error}"
    if isinstance(error, BrokerError):
        if error.code in WIRE_AUTHORIZATION_CODES:
            return (
                f"{said}; check that this slot's principal may write the remote topics"
                " (Write) and produce idempotently (IdempotentWrite)"
            )
        return said + login_hint(alias, error)
    return (
        f"{said}; check that this slot reaches its brokers ({alias}.bootstrap.servers)"
        " over the network"
    )


# SASL_AUTHENTICATION_FAILED: a broker refused the slot's login (its SaslAuthenticate).
WIRE_LOGIN_REFUSED = 58


def login_hint(alias: str, error: object) -> str:
    """What to check when a broker of cluster ``alias`` refused the slot's SASL login
    (else nothing): its user and password in the cluster's JAAS settings."""
    if isinstance(error, BrokerError) and error.code == WIRE_LOGIN_REFUSED:
        return (
            f"; check the user name and password of {alias}.sasl.jaas.config (and"
            f" {alias}.sasl.mechanism) against the users the cluster knows"
        )
    return ""


def overtaken(broker: str, remote: str, partition: int) -> str:
    """A batch's answer that came before an older batch's, sent to another broker."""
    return (
        f"broker {broker}: Produce to {remote}-{partition} answered before an older batch"
        " sent to another broker (its leader moved): the next plan starts where the remote"
        " partition ends"
    )


def kind_of(error: KafkaError) -> str:
    """``poison`` or ``transient`` for a failed send."""
    return "poison" if error.code() in POISON_CODES else "transient"


def fatal_kind(error: KafkaError) -> str:
    """The kind of a fatal producer error, from the broker error its text names."""
    text = error.str()
    for code in POISON_CODES:
        if KafkaError(code).str() in text:
            return "poison"
    return "transient"


def failure(
    kind: str,
    message: str,
    *,
    topic: str | None = None,
    partition: int | None = None,
    offset: int = -1,
    error_class: str | None = None,
) -> dict[str, Any]:
    """A failure as the protocol reports it (``srm_driver.copying.protocol.Failure``)."""
    return {
        "kind": kind,
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "message": message,
        "class": error_class,
    }
