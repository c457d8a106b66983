"""The driver's pure parts: copier summaries, client options, failure descriptions."""

from __future__ import annotations

from srm_driver.copier import FlowCopier, PartitionCopy
from srm_driver.worker import describe_failure


def test_summary_line_parses_counts_and_syncs() -> None:
    line = "orders\t3\t10\t2\t8\t1\t100\t112\t4096\t80\t15\t49\t100:40,105:44,106:45,112:49"
    where, copy = PartitionCopy.parse(line)
    assert where == ("orders", 3)
    assert (copy.passed, copy.skipped, copy.written, copy.dropped) == (10, 2, 8, 1)
    assert (copy.value_bytes, copy.latency_sum_ms, copy.latency_max_ms) == (4096, 80, 15)
    assert copy.last_downstream == 49
    assert copy.syncs == ((100, 40), (105, 44), (106, 45), (112, 49))


def test_summary_without_syncs() -> None:
    _, copy = PartitionCopy.parse("t\t0\t0\t0\t0\t0\t-1\t-1\t0\t0\t0\t-1\t")
    assert copy.syncs == () and copy.passed == 0


def test_writer_keeps_one_request_in_flight_whatever_the_config_says() -> None:
    config = FlowCopier._writer_config(
        {
            "max.in.flight.requests.per.connection": "5",
            "enable.idempotence": "false",
            "linger.ms": "50",
        }
    )
    assert config["max.in.flight.requests.per.connection"] == "1"
    assert config["enable.idempotence"] == "true"
    assert config["acks"] == "all"
    assert config["linger.ms"] == "50"  # tuning keys stay the user's


def test_source_options_drop_what_spark_manages_and_read_committed() -> None:
    options = FlowCopier._source_options(
        {
            "bootstrap.servers": "a:9092",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": "false",
            "group.id": "mine",
            "client.id": "x",
            "security.protocol": "SSL",
        },
        "srm-A-B-copier",
    )
    assert options == {
        "kafka.bootstrap.servers": "a:9092",
        "kafka.security.protocol": "SSL",
        "kafka.isolation.level": "read_committed",
        "kafka.group.id": "srm-A-B-copier",
        "includeHeaders": "true",
    }


def test_isolation_level_from_the_configuration_wins() -> None:
    options = FlowCopier._source_options(
        {"bootstrap.servers": "a:9092", "isolation.level": "read_uncommitted"}, "g"
    )
    assert options["kafka.isolation.level"] == "read_uncommitted"


def test_failure_description_is_one_line() -> None:
    assert describe_failure(RuntimeError("first line\nsecond")) == "first line"
    assert describe_failure(RuntimeError()) == "RuntimeError"
