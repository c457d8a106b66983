"""Metric endpoints: SRM's Service API v2 time series, per-flow freshness, Prometheus.

Every series answer is SRM's shape: the metric, its unit, the subject, the window size,
``aggregate`` (min, max, avg, sum of the points) and ``series`` (one point per window:
its start as ``timestamp``, its value, whether the window is closed). The range is the
last ``minutes`` or ``hours`` (default 60 minutes) or ``from``/``to``; ``samples`` keeps
the newest points; ``window`` is ``1m`` or ``1h`` (default: 1m up to 6 hours, else 1h).

Points come from memory (what the gateway read of the aggregated topics) and, for closed
windows memory no longer holds (a restarted gateway, windows past memory's keep time, a
topic retention dropped), from the SQL read model (``history``); memory wins for a
window both hold, as it is the newest.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from srm_common.config.model import SrmConfig
from srm_common.control.audit import parse_time
from srm_common.errors import ConfigError, SrmError
from srm_common.metrics.aggregate import Aggregate

from srm_api_gateway import views
from srm_api_gateway.metric_names import METRICS, Metric
from srm_api_gateway.metric_store import HOUR, MINUTE, MetricStore

WINDOWS = {"1m": MINUTE, "1h": HOUR}
DEFAULT_OBJECTIVE_MS = 60_000
# (level, subject, window_ms, from_ms, to_ms) -> stored windows, by start
History = Callable[[str, Mapping[str, str | int], int, int, int], list[Aggregate]]
TextQuery = Annotated[str | None, Query(max_length=64, description="ISO 8601 or epoch ms")]


class Range:
    """The time range and window size a request asks for; SrmError naming a bad one."""

    def __init__(
        self,
        minutes: int | None,
        hours: int | None,
        from_: str | None,
        to: str | None,
        window: str | None,
        now_ms: int,
    ) -> None:
        if minutes is not None and hours is not None:
            raise SrmError("bad request: give minutes or hours, not both")
        self.to_ms = _moment("to", to) if to is not None else now_ms
        if from_ is not None:
            self.from_ms = _moment("from", from_)
        else:
            span = (minutes or 0) * MINUTE + (hours or 0) * HOUR or 60 * MINUTE
            self.from_ms = self.to_ms - span
        if self.from_ms >= self.to_ms:
            raise SrmError("bad request: from: must be before to")
        if window is None:
            window = "1m" if self.to_ms - self.from_ms <= 6 * HOUR else "1h"
        self.window_ms = WINDOWS[window]


def _moment(name: str, text: str) -> int:
    try:
        moment = parse_time(text)
    except ValueError as exc:
        raise SrmError(f"bad request: {name}: {exc}") from None
    if not 0 <= moment < 2**53:
        raise SrmError(f"bad request: {name}: {text[:60]!r} is out of range")
    return moment


def series(
    store: MetricStore,
    metric_name: str,
    level: str,
    subject: Mapping[str, str | int],
    span: Range,
    samples: int,
    history: History | None = None,
) -> dict[str, Any]:
    metric = METRICS.get(metric_name)
    if metric is None:
        raise views.NotFound(f"unknown metric {metric_name!r}; known: {', '.join(METRICS)}")
    wanted = (level, subject, span.window_ms, span.from_ms, span.to_ms)
    by_start = {w.start_ms: w for w in history(*wanted)} if history is not None else {}
    by_start.update((w.start_ms, w) for w in store.windows(*wanted))
    windows = [by_start[start] for start in sorted(by_start)]
    points = [
        {
            "timestamp": w.start_ms,
            "value": metric.read(w.figures, w.window_ms),
            "closed": w.closed,
        }
        for w in windows
    ][-samples:]
    values = [p["value"] for p in points if p["value"] is not None]
    return {
        "metric": metric.name,
        "unit": metric.unit,
        "description": metric.description,
        "level": level,
        **{k: v for k, v in subject.items()},
        "window_ms": span.window_ms,
        "from": span.from_ms,
        "to": span.to_ms,
        "aggregate": {
            "min": min(values) if values else None,
            "max": max(values) if values else None,
            "avg": round(sum(values) / len(values), 3) if values else None,
            "sum": round(sum(values), 3) if values else None,
        },
        "series": points,
    }


def asked(
    minutes: Annotated[int | None, Query(ge=1, le=7 * 24 * 60)] = None,
    hours: Annotated[int | None, Query(ge=1, le=8 * 24)] = None,
    from_: Annotated[str | None, Query(alias="from", max_length=64)] = None,
    to: TextQuery = None,
    window: Annotated[str | None, Query(pattern="^(1m|1h)$")] = None,
    samples: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> tuple[Range, int]:
    """The range, window and number of samples a metric request asks for."""
    return Range(minutes, hours, from_, to, window, int(time.time() * 1000)), samples


Asked = Annotated[tuple[Range, int], Depends(asked)]


def freshness_objective(config: SrmConfig) -> int:
    """``srm.freshness.objective.ms``: ConfigError naming the key when it is no number."""
    raw = str(config.extra.get("srm.freshness.objective.ms", DEFAULT_OBJECTIVE_MS)).strip()
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(
            f"{raw!r} is not a whole number of milliseconds >= 1; e.g."
            f" srm.freshness.objective.ms = {DEFAULT_OBJECTIVE_MS}",
            source=config.source,
            key="srm.freshness.objective.ms",
        )
    return int(raw)


def create_router(
    config: SrmConfig, store: MetricStore, history: History | None = None
) -> APIRouter:
    router = APIRouter()
    objective_ms = freshness_objective(config)

    @router.get(
        "/v2/topic-metrics/{source}/{target}/{upstreamTopic}/{metric}",
        summary="A metric of a source topic on a replication",
    )
    def topic_metric(
        source: str,
        target: str,
        upstreamTopic: str,  # noqa: N803 - SRM's path parameter name
        metric: str,
        query: Asked,
    ) -> dict[str, Any]:
        flow = views.flow_of(config, source, target).name
        subject = {"flow": flow, "topic": upstreamTopic}
        return series(store, metric, "topic", subject, *query, history)

    @router.get(
        "/v2/topic-metrics/{target}/{downstreamTopic}/{metric}",
        summary="A metric of a remote topic on its target cluster (any replication policy)",
    )
    def remote_topic_metric(
        target: str,
        downstreamTopic: str,  # noqa: N803 - SRM's path parameter name
        metric: str,
        query: Asked,
    ) -> dict[str, Any]:
        flow, topic = _upstream(config, store, target, downstreamTopic)
        return series(store, metric, "topic", {"flow": flow, "topic": topic}, *query, history)

    @router.get(
        "/v2/replication-metrics/{source}/{target}/{metric}",
        summary="A metric of a whole replication",
    )
    def flow_metric(source: str, target: str, metric: str, query: Asked) -> dict[str, Any]:
        flow = views.flow_of(config, source, target).name
        return series(store, metric, "flow", {"flow": flow}, *query, history)

    @router.get(
        "/v2/group-metrics/{source}/{target}/{group}/{metric}",
        summary="A metric of a consumer group on a replication (checkpoints)",
    )
    def group_metric(
        source: str, target: str, group: str, metric: str, query: Asked
    ) -> dict[str, Any]:
        flow = views.flow_of(config, source, target).name
        return series(store, metric, "group", {"flow": flow, "group": group}, *query, history)

    @router.get(
        "/v2/cluster-metrics/{target}/{metric}",
        summary="A metric of every replication into a cluster",
    )
    def cluster_metric(target: str, metric: str, query: Asked) -> dict[str, Any]:
        views.known_alias(config, target)
        return series(store, metric, "cluster", {"cluster": target}, *query, history)

    @router.get("/v1/freshness", summary="Per replication: lag in time against the objective")
    def freshness() -> dict[str, Any]:
        flows = []
        for flow in sorted(config.flows.values(), key=lambda f: f.name):
            latest = store.latest("flow", {"flow": flow.name}, MINUTE)
            lag = latest.figures.lag_ms if latest is not None else None
            flows.append(
                {
                    "source": flow.source,
                    "target": flow.target,
                    "lag_ms": lag,
                    "objective_ms": objective_ms,
                    "met": None if lag is None else lag <= objective_ms,
                    "window_start": latest.start_ms if latest is not None else None,
                }
            )
        return {"objective_ms": objective_ms, "replications": flows}

    @router.get("/metrics", summary="Prometheus exposition of the latest 1-minute windows")
    def prometheus() -> Response:
        registry = CollectorRegistry()
        registry.register(_Collector(store))
        return Response(generate_latest(registry), media_type="text/plain; version=0.0.4")

    return router


def _upstream(config: SrmConfig, store: MetricStore, target: str, remote: str) -> tuple[str, str]:
    views.known_alias(config, target)
    flows = sorted(f.name for f in config.flows.values() if f.target == target)
    found = store.upstream(flows, remote)
    if found is not None:
        return found
    for flow in (f for f in config.flows.values() if f.target == target):
        policy = flow.replication_policy()
        if policy.topic_source(remote) == flow.source:
            upstream = policy.upstream_topic(remote)
            if upstream is not None:
                return flow.name, upstream
    raise views.NotFound(f"no replication into {target!r} is known to write {remote!r}")


class _Collector:
    """Gauges from the newest 1-minute window of each flow and topic."""

    GAUGES: tuple[tuple[str, str, str], ...] = (
        ("srm_replication_latency_ms_p50", "replication-latency-ms-p50", "latency p50 (ms)"),
        ("srm_replication_latency_ms_p99", "replication-latency-ms-p99", "latency p99 (ms)"),
        ("srm_replication_latency_ms_avg", "replication-latency-ms", "latency average (ms)"),
        ("srm_records_per_second", "record-rate", "records copied per second"),
        ("srm_bytes_per_second", "byte-rate", "bytes copied per second"),
        ("srm_replication_lag_records", "replication-records-lag", "records not yet copied"),
        ("srm_replication_lag_ms", "replication-lag-ms", "age of the oldest record not copied"),
        ("srm_checkpoint_latency_ms_avg", "checkpoint-latency-ms", "checkpoint latency (ms)"),
        ("srm_halted_partitions", "halted-partitions", "partitions halted"),
        ("srm_lost_records", "lost-records", "records lost to retention in the window"),
    )

    def __init__(self, store: MetricStore) -> None:
        self._store = store

    def collect(self) -> Iterable[GaugeMetricFamily]:
        for name, metric_name, documentation in self.GAUGES:
            metric: Metric = METRICS[metric_name]
            gauge = GaugeMetricFamily(name, documentation, labels=["level", "flow", "topic"])
            for level in ("flow", "topic"):
                for subject in self._store.subjects(level, MINUTE):
                    latest = self._store.latest(level, subject, MINUTE)
                    value = metric.read(latest.figures, MINUTE) if latest else None
                    if value is not None:
                        labels = [level, str(subject["flow"]), str(subject.get("topic", ""))]
                        gauge.add_metric(labels, float(value))
            yield gauge
