"""The driver's periodic status line: counts by state and the partition furthest behind,
one line at any partition count."""

from __future__ import annotations

from srm_driver.runtime import status_line


def test_the_status_line_is_as_short_at_ten_thousand_partitions() -> None:
    status = {
        "partitions": 10_000,
        "by_status": {"running": 9_990, "pending": 8, "halted": 2},
        "records": 1_234_567,
        "latency_avg_ms": 3,
        "latency_max_ms": 40,
        "largest_lag": {"topic": "t00999", "partition": 9, "records": 99_990},
    }
    assert status_line("primary->backup", status) == (
        "primary->backup: 10,000 partitions (halted 2, pending 8, running 9,990); 1,234,567"
        " records copied, latency avg 3 ms max 40 ms; furthest behind t00999-9 (99,990)"
    )
