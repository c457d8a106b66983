"""The composition root: the aggregator's clients built from its validated settings.

The Faust app (:func:`srm_metrics_aggregator.app.build_app`) makes its own Kafka clients
from the broker list and credentials it is given (the framework's); the one client of
ours, the admin that prepares the topics before Faust subscribes, is built here.
:mod:`srm_metrics_aggregator.cli` parses the command line and runs what this builds.
"""

from __future__ import annotations

import faust
from srm_common.adapters import kafka_clients

from srm_metrics_aggregator.app import build_app, prepare_topics
from srm_metrics_aggregator.settings import AggregatorSettings


def prepare(settings: AggregatorSettings, timeout: float = 30) -> tuple[int, int]:
    """The aggregator's topics made ready on its cluster (:func:`prepare_topics`): the raw
    topic's partition count and the replication factor."""
    admin = kafka_clients.admin(
        {**settings.client, "bootstrap.servers": ",".join(settings.bootstrap_servers)}
    )
    return prepare_topics(settings, admin, timeout)


def build(
    settings: AggregatorSettings, *, partitions: int, replication_factor: int, datadir: str
) -> faust.App:
    """The Faust app over the prepared topics (nothing consumed before its worker starts)."""
    return build_app(
        settings, partitions=partitions, replication_factor=replication_factor, datadir=datadir
    )
