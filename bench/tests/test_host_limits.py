"""The scale bench's host check: the limits a broker of N partitions needs, and the fix it names."""

from srm_bench.host_limits import broker_heap, needs, problems


def test_small_points_keep_the_default_heap_and_need_nothing_raised():
    assert broker_heap(1_000) is None
    assert problems(10_000, open_files_hard=20_000, map_count=65_530, root=False) == []


def test_heap_grows_with_partitions():
    assert broker_heap(10_000) == "2g"
    assert broker_heap(30_000) == "4g"


def test_thirty_thousand_partitions_name_both_limits_and_their_fixes():
    found = problems(30_000, open_files_hard=20_000, map_count=65_530, root=False)
    assert len(found) == 2
    assert "hard limit is 20,000" in found[0]
    assert "18,000 partitions" in found[0]
    assert "sysctl -w vm.max_map_count=262144" in found[1]


def test_root_raises_the_open_file_limit_itself_but_not_the_kernel_setting():
    found = problems(30_000, open_files_hard=20_000, map_count=65_530, root=True)
    assert found == [found[0]] and "vm.max_map_count" in found[0]
    assert problems(30_000, open_files_hard=20_000, map_count=262_144, root=True) == []


def test_needs_scale_per_partition():
    assert needs(30_000).open_files == 32_000
    assert needs(30_000).map_count == 80_000
