"""``make bench --wan RTT_MS[,RTT_MS...]``: the copy with the source a round trip away.

SRM's recommended layout: the driver runs beside its target, so what crosses the WAN is
the copy's fetches from the source. Here the source broker has a second listener, WAN,
advertising the port of a Toxiproxy proxy in front of it (``stack.BenchStack(wan=True)``):
a replicator bootstraps through the proxy and every address the metadata gives it points
through the proxy too. The target and the bench's own clients (load, end offsets) stay
direct.

At each round trip, one after the other on the same data set (loaded once): the raw
limit (the consumer perf tool reads through the proxy), MirrorMaker 2 with defaults,
MirrorMaker 2 tuned (plus :data:`~srm_bench.replicators.MM2_WAN_TUNED_PROPERTIES`) and
SRM's driver, catch-up only (no latency phase). Toxiproxy adds half the round trip each
way (``latency`` toxics).

What a proxy cannot show by itself: every TCP hop through it is on loopback, so a
client's receive buffer never bounds its connection the way it does across a real
round trip (one buffer per round trip). That bound is applied explicitly: a client
whose source consumer has a fixed receive buffer (``receive.buffer.bytes`` > 0, 64 KiB
for Java clients by default) gets a ``bandwidth`` toxic of buffer / round trip on each
of its connections, downstream; a client that leaves the buffer to the kernel (-1 for
Java, 0 for librdkafka: autotuning, up to ``net.ipv4.tcp_rmem``'s maximum) gets none.
The JSON records the window applied to each run.

Results: ``bench/results/wan-<time>.json`` and a PNG of copy rate against round trip
beside it (``wan_report``).
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from srm_local.clusters import ClusterStartError
from srm_local.jars import JarFetchError

from srm_bench.catchup import ReplicatorFailedError
from srm_bench.dataset import load_dataset
from srm_bench.machine import ForeignCpu, describe_machine, describe_versions
from srm_bench.options import MIB, BenchOptions
from srm_bench.progress import say
from srm_bench.raw import measure_raw
from srm_bench.replicators import (
    LABELS,
    MM2,
    MM2_TUNED,
    MM2_TUNED_PROPERTIES,
    MM2_WAN_TUNED_PROPERTIES,
    SOURCE,
)
from srm_bench.report import SystemResult
from srm_bench.stack import BenchStack
from srm_bench.toxiproxy import ToxiproxyMissingError, ToxiproxyServer, server_binary
from srm_bench.wan_report import plot, table

SCHEMA = "wan-1"
PROXY = "primary-wan"
# Java clients' receive.buffer.bytes when not set (ConsumerConfig's default).
JAVA_RECEIVE_BUFFER = 65536
# The raw consumer perf tool reads the source as a tuned WAN client does.
RAW_WAN_CONSUMER = {
    "receive.buffer.bytes": "-1",
    "max.partition.fetch.bytes": "16777216",
    "fetch.max.bytes": "67108864",
}


def receive_window(name: str, properties: Mapping[str, str]) -> int | None:
    """The receive buffer that bounds replicator ``name``'s source connections per round
    trip, from the properties it runs with; None when the kernel autotunes it."""
    value = properties.get(f"{SOURCE}.consumer.receive.buffer.bytes")
    if value is None:
        value = str(JAVA_RECEIVE_BUFFER) if name in (MM2, MM2_TUNED) else "0"
    try:
        size = int(value.strip())
    except ValueError:
        return None
    return size if size > 0 else None


@dataclass
class _Point:
    """One round trip's measurements (the JSON's ``points[i]``)."""

    rtt_ms: int
    systems: dict[str, dict[str, Any]] = field(default_factory=dict)
    raw: dict[str, Any] | None = None
    errors: dict[str, str] = field(default_factory=dict)
    foreign_cpu: dict[str, float] = field(default_factory=dict)
    configs: dict[str, dict[str, object]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "rtt_ms": self.rtt_ms,
            "systems": self.systems,
            "raw": self.raw,
            "errors": self.errors,
            "foreign_cpu_share": {k: round(v, 3) for k, v in self.foreign_cpu.items()},
            "replicator_config": self.configs,
        }


def run_wan(options: BenchOptions, folder: Path, started_at: datetime) -> int:
    from srm_bench.session import systems_to_run

    dataset = options.dataset()
    try:
        binary = server_binary()
    except ToxiproxyMissingError as exc:
        say(f"make bench --wan: {exc}")
        return 2
    say(
        f"make bench --wan {','.join(map(str, options.wan))}: {dataset.records:,} records of"
        f" {dataset.record_size} B ({dataset.mib:,.0f} MB) in {dataset.partitions} partitions;"
        f" Toxiproxy {binary}; run folder {folder}"
    )
    document: dict[str, Any] = {
        "schema": SCHEMA,
        "started_at": started_at.isoformat(timespec="seconds"),
        "dataset": dataset.describe(),
        "systems": systems_to_run(options),
        "mm2_tuned_properties": {**MM2_TUNED_PROPERTIES, **MM2_WAN_TUNED_PROPERTIES},
        "raw_consumer_properties": RAW_WAN_CONSUMER,
        "machine": describe_machine(),
        "versions": describe_versions(),
        "options": options.describe(),
        "run_folder": str(folder),
        "points": [],
    }
    stack = BenchStack(folder, wan=True)
    code = 0
    with ToxiproxyServer(binary, folder / "toxiproxy.log") as proxy:
        try:
            say("starting clusters primary (source, behind the proxy) and backup (target)...")
            stack.start()
            assert stack.wan_ports is not None
            proxy.add_proxy(PROXY, stack.wan_ports[1], stack.wan_ports[0])
            say(f"  primary across the WAN: {stack.source_wan_bootstrap} (Toxiproxy)")
            document["load_seconds"] = round(
                load_dataset(stack.source.bootstrap_servers, dataset), 3
            )
            for index, rtt in enumerate(options.wan):
                point = _measure(rtt, options, stack, proxy, folder, fresh_target=index == 0)
                document["points"].append(point.to_json())
                code = code or (1 if point.errors else 0)
        except KeyboardInterrupt:
            say("interrupted; stopping everything (the round trips measured are kept)")
            code = 130
        except (ClusterStartError, JarFetchError, KafkaException, RuntimeError, TimeoutError) as e:
            say(f"make bench --wan failed: {e}")
            code = 2
        finally:
            say("stopping the clusters and Toxiproxy...")
            stack.stop(keep_data=options.keep_data)
    document["finished_at"] = datetime.now(UTC).replace(microsecond=0).isoformat()
    if not document["points"]:
        return code or 2
    options.results_dir.mkdir(parents=True, exist_ok=True)
    path = options.results_dir / f"wan-{started_at.strftime('%Y-%m-%dT%H-%M-%SZ')}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    say("\n" + table(document) + "\n")
    if len(document["points"]) > 1:
        say(f"plot: {plot(document, path.with_suffix('.png'))}")
    say(f"results: {path}; logs and configurations: {folder}")
    return code


def _measure(
    rtt: int,
    options: BenchOptions,
    stack: BenchStack,
    proxy: ToxiproxyServer,
    folder: Path,
    *,
    fresh_target: bool,
) -> _Point:
    from srm_bench.session import run_replicator, systems_to_run

    point = _Point(rtt)
    sub = folder / f"rtt-{rtt}ms"
    sub.mkdir(parents=True, exist_ok=True)
    dataset = options.dataset()
    say(f"round trip {rtt} ms:")
    if not options.skip_raw:
        if not fresh_target:
            say(f"  wiping and restarting backup ({stack.reset_target():.1f} s)")
        proxy.set_round_trip(PROXY, rtt, receive_window("raw", {}))
        try:
            with ForeignCpu() as foreign:
                raw = measure_raw(
                    stack.source_wan_bootstrap,
                    stack.target.bootstrap_servers,
                    dataset,
                    sub,
                    RAW_WAN_CONSUMER,
                )
            point.foreign_cpu["raw"] = foreign.share
            point.raw = {"mb_s": round(raw.mb_s, 2), **raw.describe()}
            say(f"  raw: {raw.mb_s:.1f} MB/s (consumer perf across it {raw.consumer.mb_s:.1f})")
        except (RuntimeError, ValueError) as exc:
            point.errors["raw"] = str(exc)
            say(f"  raw limit FAILED: {exc}")
    for name in systems_to_run(options):
        say(f"{LABELS[name]} at {rtt} ms:")
        applied: dict[str, Any] = {}

        def before_start(
            properties: Mapping[str, str], name: str = name, applied: dict[str, Any] = applied
        ) -> None:
            window = receive_window(name, properties)
            applied["window"] = window
            proxy.set_round_trip(PROXY, rtt, window)
            if window and rtt:
                cap = window / (rtt / 1000) / MIB
                say(f"  receive buffer {window:,} B: at most {cap:.2f} MB/s per connection")

        try:
            with ForeignCpu() as foreign:
                result = run_replicator(
                    name,
                    options,
                    stack,
                    sub,
                    point,
                    source_bootstrap=stack.source_wan_bootstrap,
                    before_start=before_start,
                )
            point.foreign_cpu[name] = foreign.share
            point.systems[name] = _figures(result, applied.get("window"), rtt, dataset.mib)
        except (ReplicatorFailedError, RuntimeError, TimeoutError) as exc:
            point.errors[name] = str(exc)
            say(f"  {LABELS[name]} FAILED: {exc}")
        except Exception as exc:  # noqa: BLE001 - one replicator's bug must not lose the others
            point.errors[name] = f"{type(exc).__name__}: {exc}"
            say(f"  {LABELS[name]} FAILED:\n{traceback.format_exc()}")
    return point


def _figures(result: SystemResult, window: int | None, rtt: int, mib: float) -> dict[str, Any]:
    catchup = result.catchup
    return {
        "copy_mb_s": round(catchup.mb_s, 2),
        "records_s": round(catchup.records_s),
        "catchup_seconds": round(catchup.wall_seconds, 2),
        "first_record_seconds": round(catchup.first_record_seconds, 2),
        "cpu_seconds": round(catchup.cpu_seconds, 2),
        "cpu_seconds_per_gib": round(catchup.cpu_seconds / (mib / 1024), 2),
        "peak_rss_mb": round(result.peak_rss_mb, 1),
        "receive_window_bytes": window,
        "window_cap_mb_s_per_connection": round(window / (rtt / 1000) / MIB, 3)
        if window and rtt
        else None,
        "target_offsets_past_source": catchup.target_offsets_past_source,
    }
