"""Bounded answers at any partition count: a replication's topics and partitions a page
at a time, by name or the worst (largest lag) first, with the counts of the whole. Pure:
the configuration, the folded log and the newest metric windows in, JSON-ready dicts out.

Every page says ``total``, ``offset``, ``limit`` and ``next_offset`` (None on the last
page): a client walks the list with ``offset=next_offset``. A page holds at most
:data:`MAX_LIMIT` rows, so an answer stays small whether a flow has 8 partitions or
100,000; the default page of topics (:data:`TOPICS_LIMIT`) holds every topic of a flow
as SRM's answer did, up to that many.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from srm_common.config.model import SrmConfig
from srm_common.control.state import ControlState
from srm_common.metrics.aggregate import Aggregate

from srm_api_gateway import views
from srm_api_gateway.metric_store import MINUTE, MetricStore

MAX_LIMIT: Final = 10_000
TOPICS_LIMIT: Final = 1_000
PARTITIONS_LIMIT: Final = 100
SORTS: Final = ("name", "lag")


def page(rows: Sequence[object], limit: int, offset: int) -> dict[str, Any]:
    """``rows[offset:offset + limit]`` and where the next page starts."""
    end = offset + limit
    return {
        "total": len(rows),
        "offset": offset,
        "limit": limit,
        "next_offset": end if end < len(rows) else None,
    }


def _figures(window: Aggregate | None) -> dict[str, Any]:
    """What a row shows of its newest 1-minute window (None: not measured yet)."""
    if window is None:
        return {"records_per_s": None, "lag_records": None, "lag_ms": None, "window_start": None}
    figures = window.figures
    return {
        "records_per_s": round(figures.records * 1000 / window.window_ms, 3),
        "lag_records": figures.lag_records,
        "lag_ms": figures.lag_ms,
        "window_start": window.start_ms,
    }


def _worst_first(lag: int | None, age: int | None) -> tuple[bool, int, int]:
    """Largest lag in records first, then in time; rows not measured last."""
    return (lag is None, -(lag or 0), -(age or 0))


def topics(
    config: SrmConfig,
    state: ControlState,
    store: MetricStore,
    source: str,
    target: str,
    *,
    sort: str = "name",
    limit: int = TOPICS_LIMIT,
    offset: int = 0,
) -> dict[str, Any]:
    """A page of the topics a replication copies, each with its remote topic, partition
    count, halted partitions and newest figures (records/s, lag)."""
    flow = views.flow_of(config, source, target).name
    newest = store.newest("topic", MINUTE, flow)
    rows = [
        {**row, **_figures(newest.get(row["topic"]))}
        for row in views.replicated_topics(config, state, source, target)
    ]
    if sort == "lag":  # stable: by name among equals
        rows.sort(key=lambda r: _worst_first(r["lag_records"], r["lag_ms"]))
    return {
        "source": source,
        "target": target,
        "sort": sort,
        **page(rows, limit, offset),
        "topics": rows[offset : offset + limit],
    }


def partitions(
    config: SrmConfig,
    state: ControlState,
    store: MetricStore,
    source: str,
    target: str,
    *,
    sort: str = "lag",
    limit: int = PARTITIONS_LIMIT,
    offset: int = 0,
    topic: str | None = None,
) -> dict[str, Any]:
    """A page of a replication's partitions (all, or one topic's), the worst first by
    default, with counts of the whole flow: partitions, measured, lagging, halted."""
    flow = views.flow_of(config, source, target).name
    tasks = state.tasks.get(flow)
    planned = {tp for task in tasks.source for tp in task.partitions} if tasks else set()
    halts = {(h.topic, h.partition): h for h in state.halts.values() if h.flow == flow}
    windows = store.partitions(flow)
    # Sorted as keys; rows made for the page only (10,000 partitions, a page of 10).
    keys = []
    lagging = lag_records = measured = 0
    for tp in planned:
        window = windows.get(tp)
        lag = age = None
        if window is not None:
            measured += 1
            lag, age = window.figures.lag_records, window.figures.lag_ms
            lagging += bool(lag)
            lag_records += lag or 0
        if topic is None or tp[0] == topic:
            keys.append((_worst_first(lag, age) if sort == "lag" else (), tp))
    keys.sort()
    rows = []
    for _key, tp in keys[offset : offset + limit]:
        halt = halts.get(tp)
        rows.append(
            {
                "topic": tp[0],
                "partition": tp[1],
                "halted": halt is not None,
                "halt_reason": halt.reason if halt is not None else None,
                **_figures(windows.get(tp)),
            }
        )
    counts = {
        "partitions": len(planned),
        "measured": measured,
        "lagging": lagging,
        "halted": sum(1 for tp in halts if tp in planned),
        "lag_records": lag_records,
    }
    return {
        "source": source,
        "target": target,
        "topic": topic,
        "sort": sort,
        "counts": counts,
        **page(keys, limit, offset),
        "partitions": rows,
    }
