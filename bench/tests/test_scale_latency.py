"""Where the steady-latency phase of bench-scale sends each record."""

from srm_bench.scale_data import ScaleDataset
from srm_bench.scale_latency import spread


def test_every_partition_gets_one_record_per_cycle_in_topic_order():
    dataset = ScaleDataset(topics=3, partitions=4, records=20, record_size=1024)
    destination = spread(dataset)
    cycle = [destination(n) for n in range(12)]
    assert sorted(cycle) == sorted(dataset.source_partitions())
    assert cycle[:5] == [(t, p) for t, p in dataset.source_partitions()][:5]
    assert destination(12) == destination(0) and destination(25) == destination(1)


def test_the_replicators_share_starts_at_the_sources_acknowledgement():
    from srm_bench.scale_latency import after_acknowledgement

    latency = {0: 900.0, 1: 50.0, 2: 40.0, 3: 30.0}  # end to end, by sequence number
    acked = {0: 800.0, 1: 45.0, 3: 35.0}  # 2 never acknowledged (a timed-out send)
    # 0 is in the warm-up; 3 arrived before its acknowledgement came back.
    assert after_acknowledgement(latency, acked, first=1) == [-5.0, 5.0]
