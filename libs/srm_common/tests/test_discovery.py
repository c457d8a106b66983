"""Listings taken in the background: the leader's loop never waits for a cluster."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import pytest
from srm_common.adapters.discovery import (
    Discovery,
    DiscoveryError,
    DiscoveryPending,
    Listing,
    admin_lister,
)
from srm_common.config import load_config
from srm_common.config.model import FlowConfig

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
flows:
  primary->backup:
    enabled: true
    topics: ["orders.*"]
    groups: ["app-.*"]
"""


class SlowCluster:
    """A lister that answers only when released; counts how often it was asked."""

    def __init__(self) -> None:
        self.release = threading.Semaphore(0)
        self.calls = 0
        self.topics: Mapping[str, int] = {"orders": 2, "orders-eu": 1, "audit": 3}
        self.groups: tuple[str, ...] = ("app-1", "other")
        self.error: Exception | None = None

    def __call__(self) -> tuple[Mapping[str, int], tuple[str, ...]]:
        self.calls += 1
        self.release.acquire()
        if self.error is not None:
            raise self.error
        return self.topics, self.groups


@pytest.fixture
def flow(tmp_path: Path) -> FlowConfig:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    return load_config(path).flow("primary", "backup")


def eventually(
    discovery: Discovery, flow: FlowConfig, after_ms: int
) -> tuple[list[tuple[str, int]], list[str]]:
    deadline = time.monotonic() + 10
    while True:
        try:
            return discovery.discover(flow, after_ms)
        except DiscoveryPending:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def make(cluster: SlowCluster, clock: Callable[[], float]) -> Discovery:
    return Discovery(lister_for=lambda _flow: cluster, clock=clock)


def test_discover_answers_pending_at_once_while_the_cluster_is_slow(flow: FlowConfig) -> None:
    cluster = SlowCluster()
    discovery = make(cluster, lambda: 1.0)
    try:
        started = time.monotonic()
        for _ in range(5):
            with pytest.raises(DiscoveryPending):
                discovery.discover(flow, 0)
        assert time.monotonic() - started < 5  # did not wait for the cluster
        cluster.release.release()
        partitions, groups = eventually(discovery, flow, 0)
        assert partitions == [("orders", 0), ("orders", 1), ("orders-eu", 0)]
        assert groups == ["app-1"]
        assert cluster.calls == 1, "asking again while a listing is taken does not queue more"
    finally:
        discovery.close()


def test_a_listing_older_than_the_request_is_not_used(flow: FlowConfig) -> None:
    cluster = SlowCluster()
    now = [1.0]
    discovery = make(cluster, lambda: now[0])
    try:
        cluster.release.release()
        eventually(discovery, flow, 0)
        cluster.topics = {"orders": 4}
        now[0] = 2.0
        with pytest.raises(DiscoveryPending):
            discovery.discover(flow, 2_000)
        cluster.release.release()
        partitions, _ = eventually(discovery, flow, 2_000)
        assert partitions == [("orders", p) for p in range(4)]
        assert cluster.calls == 2
    finally:
        discovery.close()


def test_a_failed_listing_is_one_error_naming_the_flow_and_cluster(flow: FlowConfig) -> None:
    cluster = SlowCluster()
    cluster.error = DiscoveryError("Local: Broker transport failure")
    discovery = make(cluster, lambda: 1.0)
    try:
        cluster.release.release()
        with pytest.raises(DiscoveryError) as caught:
            eventually(discovery, flow, 0)
        assert str(caught.value) == (
            "primary->backup: cannot list primary: Local: Broker transport failure"
        )
    finally:
        discovery.close()


def test_a_client_setting_librdkafka_refuses_is_a_listing_error_not_a_crash(
    flow: FlowConfig,
) -> None:
    lister = admin_lister({"bootstrap.servers": "127.0.0.1:9", "no.such.setting": "x"})
    discovery = Discovery(lister_for=lambda _flow: lister)
    try:
        with pytest.raises(
            DiscoveryError, match="primary->backup: cannot list primary: .*no.such.setting"
        ):
            eventually(discovery, flow, 0)
    finally:
        discovery.close()


def test_groups_that_cannot_be_listed_fail_only_the_flows_that_need_them(
    flow: FlowConfig,
) -> None:
    def listing() -> tuple[Mapping[str, int], str]:
        return {"orders": 1}, "GROUP_AUTHORIZATION_FAILED"

    discovery = Discovery(lister_for=lambda _flow: listing)
    try:
        with pytest.raises(DiscoveryError, match="cannot list groups of primary"):
            eventually(discovery, flow, 0)
        no_groups = replace(flow, groups=())
        assert eventually(discovery, no_groups, 0) == ([("orders", 0)], [])
    finally:
        discovery.close()


def test_groups_match_only_flows_that_emit_checkpoints(flow: FlowConfig) -> None:
    listing = Listing(0, {"orders": 1}, ("app-1", "other"))
    assert listing.matching_groups(flow) == ["app-1"]
    assert listing.matching_groups(replace(flow, emit_checkpoints_enabled=False)) == []
