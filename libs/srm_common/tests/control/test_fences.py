"""Fences: the released bytes, and which fence is in force (a deposed leader's late
write, a restored log's fence, garbage and a newer version admit nobody)."""

from __future__ import annotations

from srm_common.control.fences import Fence, FenceHistory

# Version 1 as released: readers of every later release must read it.
GOLDEN_V1 = (
    b'{"v":1,"log_id":"L1","position":41,"epoch":3,'
    b'"members":[["d1","a1b2"],["d2","c3d4"]],"at":1700000000000}'
)


def fence(position: int, *members: tuple[str, str], log_id: str = "L1") -> Fence:
    return Fence(log_id, position, 1, frozenset(members))


def test_version_1_bytes_are_stable_both_ways() -> None:
    parsed = Fence.from_bytes(GOLDEN_V1)
    assert parsed == Fence("L1", 41, 3, frozenset({("d1", "a1b2"), ("d2", "c3d4")}), 1700000000000)
    assert parsed.to_bytes() == GOLDEN_V1


def test_garbage_and_newer_versions_are_no_fence() -> None:
    assert Fence.from_bytes(b"junk") is None
    assert Fence.from_bytes(None) is None
    assert Fence.from_bytes(GOLDEN_V1.replace(b'"v":1', b'"v":2')) is None
    assert Fence.from_bytes(b'{"v":1,"log_id":"L1"}') is None


def test_the_last_fence_is_in_force_and_admits_its_members_of_that_log_only() -> None:
    history = FenceHistory()
    history.add([fence(5, ("d1", "a")), fence(9, ("d1", "a"), ("d2", "b"))])
    assert history.admits("L1", "d2", "b")
    assert not history.admits("L1", "d2", "old-instance")
    assert not history.admits("L0", "d1", "a"), "a driver of another log"
    assert not history.admits(None, "d1", "a"), "a driver that read no log yet"


def test_a_deposed_leaders_late_fence_admits_nobody() -> None:
    history = FenceHistory()
    # The new leader removed d1 at position 12; the old one writes its view of 9 late.
    history.add([fence(9, ("d1", "a")), fence(12, ("d2", "b")), fence(9, ("d1", "a"))])
    assert history.current() is None
    assert not history.admits("L1", "d1", "a")
    assert not history.admits("L1", "d2", "b")  # until the leader writes again
    history.add([fence(12, ("d2", "b"))])
    assert history.admits("L1", "d2", "b")


def test_a_restored_logs_fence_ends_the_lost_logs_leases() -> None:
    history = FenceHistory()
    history.add([fence(40, ("d1", "a")), fence(3, ("d1", "z"), log_id="L2")])
    assert not history.admits("L1", "d1", "a")
    assert history.admits("L2", "d1", "z")


def test_a_record_that_is_no_fence_admits_nobody_until_the_next_fence() -> None:
    history = FenceHistory()
    history.add([fence(5, ("d1", "a")), None])
    assert not history.admits("L1", "d1", "a")
    history.add([fence(6, ("d1", "a"))])
    assert history.admits("L1", "d1", "a")
