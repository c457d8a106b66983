"""Client-config precedence for one flow, as MM2's connectors build their Kafka clients.

For flow ``S->T`` and a client on side ``S`` with role ``consumer`` (``mm2-semantics.md``
§1.3), later layers win::

    1. conn(S)                      S's connection keys, top-level ones as fallback
    2. consumer.*                   flow level: S->T.consumer.* over top-level consumer.*
    3. conn(S) + S.consumer.*       MM2 copies S's connection keys into source.consumer.*
    4. source.consumer.*            flow level: S->T.source.consumer.*

so ``S.consumer.x`` beats ``S->T.consumer.x`` and ``S->T.source.consumer.x`` beats both.
Consumers then get ``enable.auto.commit=false`` (forced) and ``auto.offset.reset=earliest``
(unless set). Top-level ``consumer.*`` etc. are an SRM extension: MM2 drops them, SRM's
documented levels (global < cluster < replication) apply them below the flow level.

The data producer is MM2's Connect worker producer instead::

    worker defaults -> conn(T) + T.producer.* -> S->T.producer.override.*
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

ClientKeys = Mapping[str, str]

DATA_PRODUCER_DEFAULTS: ClientKeys = MappingProxyType(
    {
        "acks": "all",
        # Connect sets enable.idempotence=false; our copy relies on an idempotent, in-order
        # producer for its exactly-once resume (DESIGN.md "The data path"), so it is on.
        "enable.idempotence": "true",
        "max.in.flight.requests.per.connection": "1",
        "delivery.timeout.ms": str(2**31 - 1),
        "max.block.ms": str(2**63 - 1),
    }
)


def flow_client_configs(
    source: str,
    target: str,
    connection: Mapping[str, ClientKeys],
    cluster_roles: Mapping[str, Mapping[str, ClientKeys]],
    flow_prefixes: Mapping[str, ClientKeys],
) -> dict[str, ClientKeys]:
    """Every client config of flow ``source->target``, by FlowConfig field name.

    ``connection`` maps alias -> effective connection keys; ``cluster_roles`` maps
    alias -> role -> ``<alias>.<role>.*`` keys; ``flow_prefixes`` maps a flow-level prefix
    (``consumer``, ``source.consumer``, ``producer.override``...) -> keys, top level
    already merged under the flow level.
    """

    def side(alias: str, side_name: str, role: str) -> dict[str, str]:
        conn = connection.get(alias, {})
        return {
            **conn,
            **flow_prefixes.get(role, {}),
            **conn,
            **cluster_roles.get(alias, {}).get(role, {}),
            **flow_prefixes.get(f"{side_name}.{role}", {}),
        }

    configs: dict[str, dict[str, str]] = {
        "source_consumer": _consumer(side(source, "source", "consumer")),
        "source_producer": side(source, "source", "producer"),
        "source_admin": side(source, "source", "admin"),
        "target_consumer": _consumer(side(target, "target", "consumer")),
        "target_internal_producer": side(target, "target", "producer"),
        "target_admin": side(target, "target", "admin"),
        "target_producer": {
            **DATA_PRODUCER_DEFAULTS,
            **connection.get(target, {}),
            **cluster_roles.get(target, {}).get("producer", {}),
            **flow_prefixes.get("producer.override", {}),
        },
    }
    return {name: MappingProxyType(keys) for name, keys in configs.items()}


def _consumer(keys: dict[str, str]) -> dict[str, str]:
    keys["enable.auto.commit"] = "false"  # offsets live in MM2's stores, never in groups
    keys.setdefault("auto.offset.reset", "earliest")
    return keys
