"""What the latency phases sum up from their receiver (srm_bench.latency.collect)."""

import threading

from srm_bench.latency import collect


class _Receiver:
    def __init__(self, latency_ms: dict[int, float]) -> None:
        self.latency_ms = latency_ms
        self.duplicates = 2
        self.timestamps_changed = 1
        self.stopping = threading.Event()
        self.joined = False

    def join(self, timeout: float | None = None) -> None:
        self.joined = True


def test_the_warm_up_is_left_out_and_the_receiver_stopped():
    receiver = _Receiver({n: float(n) for n in range(100)})
    result = collect(receiver, sent=100, send_seconds=10.0, rate=10, warmup=5.0)
    assert receiver.stopping.is_set() and receiver.joined
    assert (result.expected, result.measured, result.lost) == (50, 50, 0)
    assert (result.p50_ms, result.p99_ms, result.max_ms) == (74.0, 99.0, 99.0)
    assert (result.duplicates, result.timestamps_changed, result.send_rate) == (2, 1, 10.0)
