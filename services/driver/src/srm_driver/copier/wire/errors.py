"""What can go wrong on the wire, each naming the broker it happened with.

* :class:`WireError`: the connection or the bytes (refused, closed, a response that does
  not parse, a broker without the request versions this layer speaks);
* :class:`BrokerError`: a broker answered with a Kafka error code; the message names the
  broker, the request, the topic-partition when there is one, the code and its name
  (Kafka's ``Errors`` enum), e.g.
  ``broker 127.0.0.1:9092: Produce to orders-3: error 45 OUT_OF_ORDER_SEQUENCE_NUMBER``.
"""

from __future__ import annotations

# Kafka's error codes by number (org.apache.kafka.common.protocol.Errors), the ones a
# copy can meet; any other prints as its number with "UNKNOWN_CODE".
NAMES = {
    -1: "UNKNOWN_SERVER_ERROR",
    1: "OFFSET_OUT_OF_RANGE",
    2: "CORRUPT_MESSAGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    4: "INVALID_FETCH_SIZE",
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT",
    8: "BROKER_NOT_AVAILABLE",
    9: "REPLICA_NOT_AVAILABLE",
    10: "MESSAGE_TOO_LARGE",
    13: "NETWORK_EXCEPTION",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    17: "INVALID_TOPIC_EXCEPTION",
    18: "RECORD_LIST_TOO_LARGE",
    19: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    21: "INVALID_REQUIRED_ACKS",
    29: "TOPIC_AUTHORIZATION_FAILED",
    31: "CLUSTER_AUTHORIZATION_FAILED",
    32: "INVALID_TIMESTAMP",
    33: "UNSUPPORTED_SASL_MECHANISM",
    34: "ILLEGAL_SASL_STATE",
    35: "UNSUPPORTED_VERSION",
    42: "INVALID_REQUEST",
    43: "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    46: "DUPLICATE_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH",
    51: "CONCURRENT_TRANSACTIONS",
    53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    56: "KAFKA_STORAGE_ERROR",
    58: "SASL_AUTHENTICATION_FAILED",
    59: "UNKNOWN_PRODUCER_ID",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
    76: "UNSUPPORTED_COMPRESSION_TYPE",
    78: "OFFSET_NOT_AVAILABLE",
    87: "INVALID_RECORD",
    89: "THROTTLING_QUOTA_EXCEEDED",
    90: "PRODUCER_FENCED",
}

# Codes that name a passing state of the cluster (a leader moving, a coordinator loading):
# the caller may refresh its metadata or wait and ask again.
RETRIABLE = frozenset({5, 6, 7, 8, 13, 14, 15, 16, 19, 20, 51, 56, 74, 75, 78, 89})


class WireError(RuntimeError):
    """The connection or the bytes on it failed (see the module docstring)."""


class BrokerError(RuntimeError):
    """A broker answered a request with a Kafka error code."""

    def __init__(
        self, broker: str, request: str, code: int, where: str = "", detail: str | None = None
    ) -> None:
        self.broker, self.request, self.code, self.where = broker, request, code, where
        place = f" {where}" if where else ""
        said = f" ({detail})" if detail else ""
        super().__init__(
            f"broker {broker}: {request}{place}: error {code} {error_name(code)}{said}"
        )

    @property
    def retriable(self) -> bool:
        return self.code in RETRIABLE


def error_name(code: int) -> str:
    return NAMES.get(code, "UNKNOWN_CODE")
