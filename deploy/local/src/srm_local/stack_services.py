"""The services of `make up`'s stack: two coordinators, the drivers (SRM_DRIVERS or
SRM_DRIVERS_PER_TARGET), an aggregator per target cluster and the gateway, with fresh
HTTP tokens; and stopping them, drivers first."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from srm_common.config import load_config

from srm_local.clusters import (
    ClusterSpecError,
)
from srm_local.http_tokens import HttpTokens, write_tokens
from srm_local.paths import run_dir
from srm_local.services import (
    ServiceProcess,
    aggregator_service,
    coordinator_service,
    driver_service,
    gateway_service,
    stop_in_parallel,
)


def stack_drivers(targets: Sequence[str]) -> list[tuple[str, str | None]]:
    """The drivers to run, (name, target or None for every target): SRM_DRIVERS_PER_TARGET
    drivers pinned to each target cluster (``driver-<target>-<n>``: one driver set per
    site, as SRM's Driver Target Cluster deploys them), else SRM_DRIVERS drivers serving
    every target (default 1)."""
    per_target = _count("SRM_DRIVERS_PER_TARGET", 0)
    if per_target:
        return [(f"driver-{t}-{i + 1}", t) for t in targets for i in range(per_target)]
    return [(f"driver-{i + 1}", None) for i in range(_count("SRM_DRIVERS", 1))]


def _count(variable: str, default: int) -> int:
    value = os.environ.get(variable, "").strip() or str(default)
    if not value.isdigit():
        raise ClusterSpecError(f"{variable}={value!r} is not a number of drivers; e.g. 2")
    return int(value)


def stack_services(path: Path, overrides: dict[str, str]) -> list[ServiceProcess]:
    """Two coordinators (a leader and a standby of every target's log), the drivers of
    :func:`stack_drivers`, a metrics aggregator per cluster some flow writes into, and
    the API gateway.

    Their HTTP APIs take changes only from principals of a tokens file made afresh here
    (:func:`stack_tokens`): srm-control, each driver, the gateway."""
    base = int(os.environ.get("SRM_SERVICE_PORT", "8090"))
    targets = sorted({flow.target for flow in load_config(path).flows.values()})
    drivers = stack_drivers(targets)
    tokens = stack_tokens([name for name, _target in drivers])
    overrides = {**overrides, "srm.http.tokens.file": str(tokens.tokens_file)}
    services = [
        coordinator_service(f"coordinator-{i + 1}", base + i, path, overrides) for i in range(2)
    ]
    services += [
        driver_service(
            path,
            overrides,
            name=name,
            port=base + 10 + i,
            token_file=tokens.token_file(f"driver:{name}"),
            target=target,
        )
        for i, (name, target) in enumerate(drivers)
    ]
    services += [aggregator_service(path, overrides, cluster) for cluster in targets]
    return [*services, gateway_service(path, overrides, tokens.token_file("api-gateway"))]


def stack_tokens(drivers: Sequence[str]) -> HttpTokens:
    """Fresh tokens in ``.run/http`` (0700; files 0600): the tokens file the services
    read (hashes only) and one token per principal; srm-control finds its own there."""
    principals = ["srm-control", "api-gateway", *(f"driver:{name}" for name in drivers)]
    return write_tokens(run_dir() / "http", principals)


def stop_services(services: Sequence[ServiceProcess]) -> None:
    """Drivers first, in parallel (they finish their running batches), then every other
    service in parallel; each within its bound (:mod:`srm_local.services`)."""
    started = time.monotonic()
    drivers = [s for s in services if s.name.startswith("driver")]
    if drivers:
        print(
            f"stopping {', '.join(s.name for s in drivers)} (running batches finish;"
            f" {drivers[0].stop_seconds} s at most)...",
            flush=True,
        )
    stop_in_parallel(drivers)
    stop_in_parallel(s for s in services if s not in drivers)
    if services:
        print(f"stopped {len(services)} services in {time.monotonic() - started:.1f} s")
