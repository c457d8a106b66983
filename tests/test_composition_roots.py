"""Clients are built only in composition roots and adapters (docs/architecture.md).

A client is what talks to a cluster or a service: confluent-kafka's ``Producer``,
``Consumer`` and ``AdminClient``, aiokafka's ``AIOKafka*``, and the project's factories
and adapters that open one (``kafka_clients.admin/producer/consumer``, the driver's
``admin_client``, the event log's reader, writer, end and beat clients, the driver's
``CoordinatorClient``, ``FlowOffsets``, ``MirrorClient``, ``Discovery``, the copy slot's
protocol layer's ``Cluster``, ``srm_driver.copier.wire``). Each service's
root (``bootstrap.py``; srm-control's ``cli.py``) builds them from validated settings and
hands them in; every other module receives what it uses. The test reads the source (ast)
of every installed package and names each call of a client constructor outside the
places allowed below, with its file and line.

Not counted: the adapters' one-shot functions that open a client, use it and close it
within the call (``kafka_reader.read_partitions``, ``event_log_reads.read_log``,
``ensure_control_topics``); they live in the adapters and are called where the work is.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*ROOT.glob("services/*/src"), *ROOT.glob("libs/*/src")])

CONSTRUCTORS = {
    "Producer",
    "Consumer",
    "AdminClient",
    "SerializingProducer",
    "DeserializingConsumer",
    "admin_client",
    "EventLogReader",
    "EventLogWriter",
    "EventLogEnd",
    "BeatWriter",
    "BeatReader",
    "CoordinatorClient",
    "FlowOffsets",
    "MirrorClient",
    "Discovery",
    "Cluster",
}
FACTORY_MODULE = "srm_common.adapters.kafka_clients"
FACTORIES = {"admin", "producer", "consumer"}

# Where clients are built, and why there.
ALLOWED = {
    "srm_common/adapters/": "the adapters every service shares",
    "srm_common/testing.py": "the shared fakes (an in-memory log read through the real reader)",
    "srm_driver/bootstrap.py": "the driver's composition root",
    "srm_driver/kafka_admin.py": "the driver's admin adapter (admin_client is its factory)",
    "srm_driver/acl_probe.py": "an adapter: one DescribeAcls over aiokafka's protocol",
    "srm_driver/source_codecs.py": "an adapter: the codec probe's Fetch over aiokafka's protocol",
    "srm_driver/copier/clients.py": "the copy slot's root (a process of its own, in Spark)",
    "srm_coordinator/bootstrap.py": "the coordinator's composition root",
    "srm_api_gateway/bootstrap.py": "the gateway's composition root",
    "srm_metrics_aggregator/bootstrap.py": "the aggregator's root (Faust makes its own clients)",
    "srm_control/cli.py": "srm-control's root (main builds the Sender and the Kafka clients)",
}


def _constructor(call: ast.Call, factories: set[str]) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        name = func.id
        if name in CONSTRUCTORS or name.startswith("AIOKafka") or name in factories:
            return name
    elif isinstance(func, ast.Attribute):
        name = func.attr
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        if name in CONSTRUCTORS or name.startswith("AIOKafka"):
            return f"{owner}.{name}" if owner else name
        if owner == "kafka_clients" and name in FACTORIES:
            return f"kafka_clients.{name}"
    return None


def constructions(source: str) -> list[tuple[int, str]]:
    """(line, what) of every client constructor called in ``source``."""
    tree = ast.parse(source)
    factories = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == FACTORY_MODULE
        for alias in node.names
        if alias.name in FACTORIES
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (what := _constructor(node, factories)):
            found.append((node.lineno, what))
    return sorted(found)


def _where(path: Path, src: Path) -> str:
    return path.relative_to(src).as_posix()


def _allowed(module: str) -> bool:
    return any(module == place or module.startswith(place) for place in ALLOWED if place)


def test_clients_are_built_only_in_composition_roots_and_adapters() -> None:
    outside: list[str] = []
    for src in SOURCES:
        for path in sorted(src.rglob("*.py")):
            module = _where(path, src)
            found = constructions(path.read_text())
            if found and not _allowed(module):
                outside += [f"{path.relative_to(ROOT)}:{line}: {what}(" for line, what in found]
    assert not outside, (
        "clients built outside a composition root or an adapter (build them in the "
        "service's bootstrap.py and hand them in):\n" + "\n".join(outside)
    )


def test_the_scan_sees_each_kind_of_constructor() -> None:
    """So that the test above could fail: every form it must see, seen."""
    source = (
        "from confluent_kafka import Producer\n"
        "from srm_common.adapters import kafka_clients\n"
        "from srm_common.adapters.kafka_clients import consumer as make_consumer\n"
        "import aiokafka\n"
        "a = Producer({})\n"
        "b = kafka_clients.admin({})\n"
        "c = make_consumer({})\n"
        "d = aiokafka.AIOKafkaConsumer('t')\n"
        "e = EventLogReader(settings, client_id='x')\n"
        "f = admin_client({})\n"
        "h = FlowOffsets(flow)\n"
        "g = producer_config({})\n"  # keys for a client, not a client
    )
    assert [what for _line, what in constructions(source)] == [
        "Producer",
        "kafka_clients.admin",
        "make_consumer",
        "aiokafka.AIOKafkaConsumer",
        "EventLogReader",
        "admin_client",
        "FlowOffsets",
    ]
