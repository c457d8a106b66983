"""Membership: beats and the clock in, DriverJoined / DriverLeft out (no Kafka)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from srm_common.control.beats import Beat
from srm_common.control.events import AssignmentChanged, DriverJoined, DriverLeft, Envelope, Event
from srm_common.control.state import ControlState, apply
from srm_coordinator.membership import Membership

SESSION_MS = 10_000


def beat(
    driver: str, at_ms: int, *, generation: int = 0, leaving: bool = False, instance: str = ""
) -> Beat:
    return Beat(
        driver,
        f"http://{driver}:1",
        f"host-{driver}",
        at_ms,
        generation,
        leaving=leaving,
        instance=instance,
        lease_ms=5000,
        write_timeout_ms=10000,
    )


def fold(state: ControlState, events: Iterable[Event], at_ms: int = 0) -> ControlState:
    for event in events:
        state = apply(state, Envelope(event, at_ms, "test", offset=state.offset + 1))
    return state


def joined(membership: Membership, *drivers: str, at_ms: int = 1_000) -> ControlState:
    """A state where ``drivers`` joined after beating at ``at_ms``."""
    membership.observe([beat(d, at_ms) for d in drivers], at_ms)
    return fold(ControlState(), membership.changes(ControlState(), at_ms), at_ms)


def keep_beating(membership: Membership, driver: str, start_ms: int, end_ms: int) -> None:
    for at_ms in range(start_ms, end_ms + 1, 1_000):
        membership.observe([beat(driver, at_ms)], at_ms)


def test_first_beat_of_an_unknown_driver_makes_it_join() -> None:
    membership = Membership(SESSION_MS)
    membership.observe([beat("d1", 1_000)], 1_000)
    events = membership.changes(ControlState(), 1_000)
    assert events == [DriverJoined("d1", "http://d1:1", "host-d1")]
    assert membership.reports["d1"].generation == 0


def test_a_member_that_keeps_beating_neither_joins_again_nor_leaves() -> None:
    membership = Membership(SESSION_MS)
    state = joined(membership, "d1")
    membership.observe([beat("d1", 9_000)], 9_000)
    assert membership.changes(state, 18_000) == []


def test_member_is_not_judged_before_the_session_timeout() -> None:
    membership = Membership(SESSION_MS)
    state = joined(membership, "d1", at_ms=1_000)
    assert membership.changes(state, 1_000 + SESSION_MS) == []


def test_silent_member_leaves_after_the_session_timeout_with_a_readable_reason() -> None:
    membership = Membership(SESSION_MS)
    state = joined(membership, "d1", "d2", at_ms=1_000)
    keep_beating(membership, "d2", 2_000, 1_000 + SESSION_MS + 500)
    events = membership.changes(state, 1_000 + SESSION_MS + 500)
    assert events == [DriverLeft("d1", "no heartbeat for 10.5 s (session timeout 10.0 s)")]
    assert "d1" not in membership.reports


def test_while_no_beat_arrives_at_all_nobody_is_removed_for_silence() -> None:
    # The control cluster (or the way to it) is down: the leader reads no beats, and
    # there would be no live driver to give the tasks to anyway.
    membership = Membership(SESSION_MS)
    state = joined(membership, "d1", "d2", at_ms=1_000)
    assert membership.changes(state, 1_000 + 3 * SESSION_MS) == []


def test_when_beats_come_back_after_a_gap_every_member_gets_a_new_session() -> None:
    membership = Membership(SESSION_MS)
    state = joined(membership, "d1", "d2", at_ms=1_000)
    back = 1_000 + 3 * SESSION_MS
    # d2's beats are read first; d1's next one is a moment behind: nobody is removed.
    membership.observe([beat("d2", back)], back)
    assert membership.changes(state, back + 500) == []
    keep_beating(membership, "d2", back + 1_000, back + SESSION_MS + 500)
    # d1 stays silent for a whole session after the beats came back: now it leaves.
    [left] = membership.changes(state, back + SESSION_MS + 500)
    assert left.driver == "d1"


def test_leaving_beat_makes_the_driver_leave_at_once() -> None:
    membership = Membership(SESSION_MS)
    state = joined(membership, "d1", "d2", at_ms=1_000)
    membership.observe([beat("d1", 1_100, leaving=True)], 1_100)
    assert membership.changes(state, 1_100) == [DriverLeft("d1", "stopped and left the group")]


def test_leaving_beat_of_an_unknown_driver_does_not_make_it_join() -> None:
    membership = Membership(SESSION_MS)
    membership.observe([beat("d1", 1_000, leaving=True)], 1_000)
    assert membership.changes(ControlState(), 1_000) == []


def test_departed_driver_never_rejoins_under_its_old_id() -> None:
    membership = Membership(SESSION_MS)
    state = joined(membership, "d1", "w", at_ms=1_000)
    now = 1_000 + SESSION_MS + 1
    keep_beating(membership, "w", 2_000, now)
    state = fold(state, membership.changes(state, now), now)
    assert "d1" not in state.drivers
    membership.observe([beat("d1", now + 10)], now + 10)
    assert membership.changes(state, now + 10) == []
    assert "d1" not in membership.reports


def test_stale_beat_does_not_move_the_clock_back() -> None:
    membership = Membership(SESSION_MS)
    state = joined(membership, "d1", at_ms=5_000)
    membership.observe([beat("d1", 2_000, generation=9)], 7_000)
    assert membership.changes(state, 7_000) == []
    assert membership.last_seen["d1"] == 5_000
    assert membership.reports["d1"].generation == 0
    keep_beating(membership, "w", 8_000, 5_000 + SESSION_MS + 1)
    left = [e for e in membership.changes(state, 5_000 + SESSION_MS + 1) if e.driver == "d1"]
    assert left and isinstance(left[0], DriverLeft)


def test_beat_from_the_future_counts_as_now() -> None:
    membership = Membership(SESSION_MS)
    membership.observe([beat("d1", 99_000)], 1_000)
    membership.changes(ControlState(), 1_000)
    assert membership.last_seen["d1"] == 1_000


def test_a_restart_under_the_same_id_replaces_the_old_incarnation_and_rejoins() -> None:
    membership = Membership(SESSION_MS)
    membership.observe([beat("d1", 1_000, instance="a")], 1_000)
    state = fold(ControlState(), membership.changes(ControlState(), 1_000))
    assert state.drivers["d1"].instance == "a"
    membership.observe([beat("d1", 2_000, instance="b")], 2_000)
    events = membership.changes(state, 2_000)
    assert [type(e).__name__ for e in events] == ["DriverLeft", "DriverJoined"]
    assert "replaced by instance b" in events[0].reason  # type: ignore[union-attr]
    state = fold(state, events)
    assert state.drivers["d1"].instance == "b"
    (departure,) = membership.departures
    assert (departure.driver, departure.lease_ms, departure.write_timeout_ms) == ("d1", 5000, 10000)
    # The old incarnation keeps beating (a second live process): ignored, it must stop.
    membership.observe([beat("d1", 2_500, instance="a")], 2_500)
    assert membership.changes(state, 2_500) == []


def test_a_departed_member_takes_its_tasks_and_running_ones_to_the_departure() -> None:
    membership = Membership(SESSION_MS)
    membership.observe([beat("d1", 1_000, instance="a")], 1_000)
    state = fold(ControlState(), membership.changes(ControlState(), 1_000))
    state = fold(state, [AssignmentChanged(1, {"t0": "d1"}, ())])
    running = Beat("d1", "u", "h", 1_500, 1, frozenset({"t0", "t9"}), instance="a")
    membership.observe([running], 1_500)
    membership.changes(state, 1_500)
    keep_beating(membership, "w", 2_500, 1_500 + SESSION_MS + 1)  # another driver beats
    membership.changes(state, 1_500 + SESSION_MS + 1)
    (departure,) = membership.departures
    assert departure.tasks == {"t0", "t9"}, "assigned and still reported running"


def test_adopt_gives_inherited_members_a_full_session() -> None:
    inherited = fold(
        ControlState(),
        [DriverJoined("d1", "http://d1:1", "h1"), DriverJoined("d2", "http://d2:1", "h2")],
    )
    membership = Membership(SESSION_MS)
    membership.adopt(inherited, 50_000)
    assert membership.changes(inherited, 50_000 + SESSION_MS) == []
    # d2 keeps beating; d1 was never heard from by this leader.
    keep_beating(membership, "d2", 51_000, 50_000 + SESSION_MS + 1)
    events = membership.changes(inherited, 50_000 + SESSION_MS + 1)
    assert [e.driver for e in events if isinstance(e, DriverLeft)] == ["d1"]
    assert not [e for e in events if isinstance(e, DriverJoined)]


def test_an_older_incarnation_read_again_by_a_new_leader_does_not_replace_the_member() -> None:
    """A new leader reads a session of past beats: those of a dead earlier incarnation
    look fresh to its clock, but they come before the member's first beat in the topic."""
    inherited = fold(ControlState(), [DriverJoined("d1", "http://d1:1", "h", "b")])
    membership = Membership(SESSION_MS)
    membership.adopt(inherited, 1_000)
    old = replace(beat("d1", 500, instance="a"), offset=10)
    current = [replace(beat("d1", 600 + i, instance="b"), offset=11 + i) for i in range(3)]
    membership.observe([old, *current], 1_000)
    assert membership.changes(inherited, 1_000) == [], "the ghost of instance a stays a ghost"
    newer = replace(beat("d1", 2_000, instance="c"), offset=40)
    membership.observe([newer], 2_000)
    events = membership.changes(inherited, 2_000)
    assert [type(e).__name__ for e in events] == ["DriverLeft", "DriverJoined"]


def test_a_drivers_wall_clock_stepping_back_does_not_make_it_silent() -> None:
    """Beats of one incarnation are ordered by their sequence, not by the clock that
    stamped them: after a step back of an hour the driver is still alive."""
    membership = Membership(SESSION_MS)
    wall = 10_000_000
    first = replace(beat("d1", wall, instance="a"), seq=1)
    membership.observe([first], 1_000)
    state = fold(ControlState(), membership.changes(ControlState(), 1_000), 1_000)
    assert "d1" in state.drivers
    stepped_back = replace(beat("d1", wall - 3_600_000, instance="a"), seq=2)
    membership.observe([stepped_back], 1_000 + SESSION_MS - 1)
    assert membership.changes(state, 1_000 + SESSION_MS + 1) == []  # not silent
    assert first.older_than(stepped_back) and not stepped_back.older_than(first)


def test_a_driver_that_said_goodbye_has_only_what_it_still_ran_waited_out() -> None:
    """A clean stop: the copy stopped (nothing outstanding) before the leaving beat, which
    lists only the heartbeat task still running; the source task moves at once."""
    membership = Membership(SESSION_MS)
    membership.observe([beat("d1", 1_000, instance="a")], 1_000)
    state = fold(ControlState(), membership.changes(ControlState(), 1_000))
    state = fold(state, [AssignmentChanged(1, {"t0": "d1", "hb": "d1"}, ())])
    goodbye = Beat("d1", "u", "h", 1_500, 1, frozenset({"hb"}), leaving=True, instance="a")
    membership.observe([goodbye], 1_500)
    (left,) = membership.changes(state, 1_500)
    assert isinstance(left, DriverLeft) and left.reason == "stopped and left the group"
    (departure,) = membership.departures
    assert departure.tasks == {"hb"}
