"""srm_harness.pool.start_on_fresh_ports: a start that fails is retried on clusters built
anew (new ports), the failed ones stopped; the last failure is raised."""

from __future__ import annotations

import pytest
from srm_harness import pool
from srm_local.errors import ClusterStartError


class Cluster:
    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


def _failing(times: int, monkeypatch: pytest.MonkeyPatch) -> list[list[Cluster]]:
    """start_clusters fails ``times`` times, then starts; returns every batch it saw."""
    seen: list[list[Cluster]] = []

    def start_clusters(clusters: list[Cluster], fresh: bool) -> dict[str, float]:
        assert fresh, "a retry starts on fresh data"
        seen.append(clusters)
        if len(seen) <= times:
            raise ClusterStartError("port 9092 taken")
        return {c.alias: 1.5 for c in clusters}

    monkeypatch.setattr(pool, "start_clusters", start_clusters)
    return seen


def test_a_failed_start_is_retried_on_clusters_built_anew(monkeypatch) -> None:
    seen = _failing(2, monkeypatch)
    timings: dict[str, float] = {}
    started = pool.start_on_fresh_ports(lambda: [Cluster("a"), Cluster("b")], timings)  # type: ignore[arg-type,return-value]
    assert len(seen) == 3 and started is seen[-1]
    assert all(c.stopped for batch in seen[:2] for c in batch), "failed batches are stopped"
    assert not any(c.stopped for c in started)
    assert timings == {"a": 1.5, "b": 1.5}


def test_the_last_failure_is_raised_after_every_attempt(monkeypatch) -> None:
    seen = _failing(5, monkeypatch)
    with pytest.raises(ClusterStartError, match="port 9092 taken"):
        pool.start_on_fresh_ports(lambda: [Cluster("a")], {}, attempts=3)  # type: ignore[arg-type,return-value]
    assert len(seen) == 3 and all(batch[0].stopped for batch in seen)
