"""Why a cluster's topic ACL listing came back empty: none, or a refusal librdkafka hid.

confluent-kafka 2.16 (librdkafka) answers ``describe_acls`` with an empty list when the
broker's DescribeAcls response carries an error: ``SECURITY_DISABLED`` (no authorizer)
and ``CLUSTER_AUTHORIZATION_FAILED`` (no DESCRIBE on the cluster) look exactly like a
cluster without topic ACLs (seen against Kafka 4 in tests/integration/test_acl_sync.py).
CreateAcls errors do come through. So when a listing is empty, ACL sync asks the broker
once more with aiokafka's protocol classes, which keep the response's error code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from srm_common.adapters.kafka_clients import aiokafka_security

# Kafka's codes (org.apache.kafka.common.protocol.Errors) and filter values.
CLUSTER_AUTHORIZATION_FAILED = 31
SECURITY_DISABLED = 54
_TOPIC, _ANY = 2, 1


def describe_acls_error(keys: Mapping[str, str], timeout: float) -> tuple[int, str] | None:
    """The error code and message of a DescribeAcls for every topic ACL, sent to one
    broker of the cluster ``keys`` connect to (Java keys, as the configuration has them);
    None when the broker answered without error. Raises what aiokafka raises when the
    cluster cannot be reached (the caller reports it)."""
    return asyncio.run(asyncio.wait_for(_ask(dict(keys)), timeout))


async def _ask(keys: dict[str, str]) -> tuple[int, str] | None:
    from aiokafka.client import AIOKafkaClient
    from aiokafka.protocol.admin import DescribeAclsRequest

    client = AIOKafkaClient(
        bootstrap_servers=keys["bootstrap.servers"].split(","),
        client_id="srm-acl-probe",
        **aiokafka_security(keys),
    )
    try:
        await client.bootstrap()
        node = client.get_random_node()
        request = DescribeAclsRequest(_TOPIC, None, _ANY, None, None, _ANY, _ANY)  # type: ignore[arg-type]
        response = await client.send(node, request)
    finally:
        await client.close()
    code = int(response.error_code)
    return (code, str(response.error_message or "")) if code else None
