"""The requests this layer speaks, each at one version: the newest that is not yet
flexible (no tagged fields), which every Kafka broker from 2.x to 4.x accepts (Kafka 4.0
dropped only older versions: Produce 0-2, Fetch 0-3, ListOffsets 0, KIP-896).

    request         key  version  first flexible
    Produce           0        8               9
    Fetch             1       11              12
    ListOffsets       2        5               6
    Metadata          3        8               9
    ApiVersions      18        2               3
    InitProducerId   22        1               2
    SaslHandshake    17        1               -   (with SASL only)
    SaslAuthenticate 36        1               2   (with SASL only)

A connection asks each broker's ApiVersions first and refuses a broker that does not
accept one of these (:func:`unsupported`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Api:
    key: int
    version: int
    name: str


PRODUCE = Api(0, 8, "Produce")
FETCH = Api(1, 11, "Fetch")
LIST_OFFSETS = Api(2, 5, "ListOffsets")
METADATA = Api(3, 8, "Metadata")
API_VERSIONS = Api(18, 2, "ApiVersions")
INIT_PRODUCER_ID = Api(22, 1, "InitProducerId")

SASL_HANDSHAKE = Api(17, 1, "SaslHandshake")
SASL_AUTHENTICATE = Api(36, 1, "SaslAuthenticate")

SPOKEN = (PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, INIT_PRODUCER_ID)
SASL = (SASL_HANDSHAKE, SASL_AUTHENTICATE)


def unsupported(ranges: dict[int, tuple[int, int]], wanted: tuple[Api, ...] = SPOKEN) -> list[str]:
    """The requests a broker with these (min, max) version ranges by key would refuse,
    as ``"Fetch v11 (broker: 12-17)"``; empty when it accepts every one."""
    refused = []
    for api in wanted:
        low, high = ranges.get(api.key, (0, -1))
        if not low <= api.version <= high:
            offered = f"{low}-{high}" if high >= 0 else "none"
            refused.append(f"{api.name} v{api.version} (broker: {offered})")
    return refused
