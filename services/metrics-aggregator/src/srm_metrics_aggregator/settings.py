"""The aggregator's settings, read once from the configuration the other services use.

Keys (top level, ``replication:`` in srm.yaml; ``--set KEY=VALUE`` overrides any):

    srm.metrics.windows            window sizes, e.g. ``1m,1h`` (default), ``2s,1m``
    srm.metrics.grace.ms           how long after its end a window waits for samples
                                   (default 30000; never more than the window's size)
    srm.metrics.update.ms          how often an open window is written again (default 5000)
    srm.metrics.aggregator.id      Faust app id = consumer group = prefix of its own
                                   topics (default srm-metrics-aggregator)
    srm.metrics.topic.partitions   partitions of the raw topic when the aggregator has to
                                   create it (default 6); an existing topic keeps its own

The replication factor of the aggregator's topics is the flows' into that cluster
(``srm.metrics.topic.replication.factor``, else ``replication.factor``), else
``min(3, brokers)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from srm_common.config.model import SrmConfig
from srm_common.errors import ConfigError

from srm_metrics_aggregator.fold_settings import Settings
from srm_metrics_aggregator.windows import parse_duration, parse_windows

DEFAULT_APP_ID = "srm-metrics-aggregator"


@dataclass(frozen=True)
class AggregatorSettings:
    cluster: str
    bootstrap_servers: tuple[str, ...]
    client: Mapping[str, str]
    folds: Settings
    app_id: str = DEFAULT_APP_ID
    replication_factor: int | None = None  # None: min(3, brokers)
    raw_partitions: int = 6
    extra: Mapping[str, str] = field(default_factory=dict)

    def topic(self, name: str) -> str:
        """One of the aggregator's own topics: prefixed by the app id, ending in
        ``.internal`` so MirrorMaker's default topic filter never replicates it."""
        return f"{self.app_id}.{name}.internal"


def aggregator_settings(config: SrmConfig, cluster: str) -> AggregatorSettings:
    """The settings for aggregating ``cluster``'s raw metrics; ConfigError naming the key."""
    target = config.cluster(cluster)
    extra = config.extra
    windows = parse_windows(extra.get("srm.metrics.windows", "1m,1h"))
    grace = parse_duration(extra.get("srm.metrics.grace.ms", "30000"), key="srm.metrics.grace.ms")
    update = extra.get("srm.metrics.update.ms", "5000").strip()
    if not update.isdigit():
        raise ConfigError(
            f"{update!r} is not a number of milliseconds", key="srm.metrics.update.ms"
        )
    app_id = extra.get("srm.metrics.aggregator.id", DEFAULT_APP_ID).strip()
    if not app_id or any(not (c.isalnum() or c in "._-") for c in app_id):
        raise ConfigError(
            f"{app_id!r} cannot start a topic name; use letters, digits, '.', '_' or '-'",
            key="srm.metrics.aggregator.id",
        )
    partitions = extra.get("srm.metrics.topic.partitions", "6").strip()
    if not partitions.isdigit() or int(partitions) < 1:
        raise ConfigError(f"{partitions!r}: at least 1", key="srm.metrics.topic.partitions")
    factors = [
        flow.metrics_topic_replication_factor
        if flow.metrics_topic_replication_factor > 0
        else flow.replication_factor
        for flow in config.flows.values()
        if flow.target == cluster
    ]
    # Security settings were checked when the configuration loaded (config.security).
    client = target.client_config("consumer")
    return AggregatorSettings(
        cluster=cluster,
        bootstrap_servers=target.bootstrap_servers,
        client=client,
        folds=Settings(windows=windows, grace_ms=grace, update_ms=int(update)),
        app_id=app_id,
        replication_factor=max(factors) if factors and max(factors) > 0 else None,
        raw_partitions=int(partitions),
    )
