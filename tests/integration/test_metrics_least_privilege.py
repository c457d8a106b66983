"""The metrics aggregator under exactly the ACLs ``srm-control acls --print`` lists for it,
on a SASL_SSL cluster with StandardAuthorizer (``allow.everyone.if.no.acl.found=false``):
it creates what it needs, joins its group and folds raw samples into windows."""

from __future__ import annotations

import time
import uuid

import pytest
from srm_common.config import load_config
from srm_common.metrics import aggregate
from srm_common.metrics.aggregate import AGGREGATED_TOPIC
from srm_common.metrics.raw import RAW_TOPIC, Histogram, PartitionSample, encode
from srm_common.required_acls import required_acls
from srm_harness.clients import consume_all, produce
from srm_harness.control import write_config
from srm_harness.processes import ChildProcess, log_tails
from srm_harness.records import Record
from srm_harness.waits import wait_until

pytestmark = pytest.mark.integration


def test_the_aggregator_folds_samples_under_exactly_its_printed_acls(
    kafka_secured, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    primary, backup = kafka_secured["primary"], kafka_secured["backup"]
    token = uuid.uuid4().hex[:6]
    app_id = f"agg-lp-{token}"
    user = backup.create_user(f"agg-{token}", "agg-pw")
    config = write_config(
        tmp_path,
        {"primary": primary.bootstrap_servers, "backup": backup.bootstrap_servers},
        flows={"primary->backup": {"enabled": True}},
        replication={
            "srm.metrics.aggregator.id": app_id,
            "srm.metrics.windows": "2s",
            "srm.metrics.grace.ms": 500,
            "srm.metrics.update.ms": 500,
        },
        cluster_keys={
            "primary": primary.mm2_keys(primary.admin),
            "backup": backup.mm2_keys(user),
        },
    )
    rows = [
        r
        for r in required_acls(load_config(config))
        if r.service == "metrics-aggregator" and r.cluster == "backup"
    ]
    grouped: dict[tuple[str, str, str, str], set[str]] = {}
    for row in rows:
        b = row.binding
        assert b.principal == user.principal, b
        grouped.setdefault((b.principal, b.resource_type, b.name, b.pattern_type), set()).add(
            b.operation
        )
    for (principal, resource, name, pattern), operations in grouped.items():
        backup.allow(principal, resource, name, *sorted(operations), pattern=pattern)
    print(f"\naggregator's ACLs on backup (acls --print): {len(rows)} bindings")
    for (principal, resource, name, pattern), operations in sorted(grouped.items()):
        print(f"    {principal} {resource}:{name} ({pattern}) {','.join(sorted(operations))}")

    process = ChildProcess(
        "srm_metrics_aggregator",
        ["--config", str(config), "--cluster", "backup", "--data-dir", str(tmp_path / "agg")],
        tmp_path / "aggregator.log",
    )
    process.start()
    try:

        def assigned() -> bool:
            lines = [x for x in process.log_text().splitlines() if "assigned raw partitions" in x]
            return bool(lines) and "assigned raw partitions []" not in lines[-1]

        wait_until(
            assigned,
            120,
            "the aggregator joined its group and got raw partitions",
            detail=log_tails([process]),
        )
        flow = f"lp{token}->backup"
        now = int(time.time() * 1000)
        samples = [
            PartitionSample(
                id=f"lp/{token}/{i}",
                at_ms=now - (10 - i) * 5,
                interval_ms=5,
                flow=flow,
                topic="orders",
                partition=i % 3,
                remote_topic="primary.orders",
                records=7,
                bytes=70,
                latency=Histogram.of([5] * 7),
                latency_sum_ms=35,
                latency_min_ms=5,
                latency_max_ms=5,
                lag_records=0,
                lag_ms=0,
            )
            for i in range(10)
        ]
        admin = backup.client_config()
        produce(
            backup.bootstrap_servers,
            RAW_TOPIC,
            [Record(s.key(), encode(s)) for s in samples],
            config=admin,
        )

        def folded() -> int:
            records = 0
            latest: dict[bytes | None, bytes | None] = {}
            for part in consume_all(
                backup.bootstrap_servers, AGGREGATED_TOPIC, client=admin
            ).values():
                for record in part:
                    latest[record.key] = record.value
            for value in latest.values():
                window = aggregate.read(value)
                if (
                    isinstance(window, aggregate.Aggregate)
                    and window.subject.get("flow") == flow
                    and window.level == "flow"
                ):
                    records += window.figures.records
            return records

        wait_until(
            lambda: folded() == 70,
            90,
            "the aggregator folded the 70 records of 10 samples",
            detail=log_tails([process]),
        )
        print(f"folded under least privilege: {folded()} records of flow {flow}")
        assert "AUTHORIZATION_FAILED" not in process.log_text(), log_tails([process])()
    finally:
        process.stop(30)
