"""Cooperative incremental assignment: revoke in one round, assign in a later one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st
from srm_common.control.assignment import MemberReport, Rebalance, rebalance
from srm_common.control.events import (
    DriverJoined,
    DriverLeft,
    Envelope,
    Event,
)
from srm_common.control.state import ControlState, apply
from srm_common.control.task_configs import task_configs
from srm_common.control.task_ids import source_task_id

AB, BA = "primary->backup", "backup->primary"


def configs(flow: str, sources: int, *, checkpoint: int = 0, heartbeat: bool = False) -> Event:
    source = tuple(((f"t{i}", 0),) for i in range(sources))
    groups = tuple((f"g{i}",) for i in range(checkpoint))
    return task_configs(flow, 1, source, groups, heartbeat)


def then(state: ControlState, *events: Event) -> ControlState:
    for event in events:
        state = apply(state, Envelope(event, 0))
    return state


def joined(*drivers: str) -> list[Event]:
    return [DriverJoined(d, f"http://{d}", "") for d in drivers]


def commit(state: ControlState, change: Rebalance) -> ControlState:
    """Append the round's decision, as the coordinator does."""
    return then(state, change.to_event(state))


def applied(state: ControlState, drivers: Iterable[str]) -> dict[str, MemberReport]:
    """Every driver has applied the current generation and runs exactly its tasks."""
    return {d: MemberReport(d, state.generation, frozenset(state.tasks_of(d))) for d in drivers}


def loads(state: ControlState) -> Counter[str]:
    return Counter(state.assignment.values())


TWELVE = then(ControlState(), configs(AB, 10, checkpoint=1, heartbeat=True), *joined("d1", "d2"))


def test_a_new_group_is_dealt_round_robin_in_task_order() -> None:
    change = rebalance(TWELVE, ["d3", "d1", "d2"], {})
    tasks = TWELVE.all_task_ids()
    assert change.assigned == {task: f"d{k % 3 + 1}" for k, task in enumerate(tasks)}
    assert change.revoked == () and change.moved == 12
    assert change.to_event(TWELVE).generation == 1
    assert loads(commit(TWELVE, change)) == {"d1": 4, "d2": 4, "d3": 4}


def test_a_fourth_driver_gets_a_quarter_in_two_rounds_and_nothing_else_moves() -> None:
    drivers = ["d1", "d2", "d3"]
    state = commit(TWELVE, rebalance(TWELVE, drivers, {}))
    before = dict(state.assignment)
    assert not rebalance(state, drivers, applied(state, drivers)), "a balanced group is stable"

    drivers.append("d4")
    reports = applied(state, drivers)
    first = rebalance(state, drivers, reports)
    assert first.assigned == {} and len(first.revoked) == 3
    assert {before[task] for task in first.revoked} == {"d1", "d2", "d3"}, "one from each"
    state = commit(state, first)

    assert not rebalance(state, drivers, reports), "nothing is assigned before reports catch up"
    reports = applied(state, drivers)
    second = rebalance(state, drivers, reports)
    assert second.revoked == () and second.assigned == dict.fromkeys(first.revoked, "d4")
    state = commit(state, second)
    assert loads(state) == {"d1": 3, "d2": 3, "d3": 3, "d4": 3}
    moved = [task for task, driver in state.assignment.items() if before[task] != driver]
    assert len(moved) == 3, "only a quarter of the tasks moved"
    assert not rebalance(state, drivers, applied(state, drivers))


def test_a_driver_without_a_report_blocks_assignment_once_anything_was_assigned() -> None:
    state = commit(TWELVE, rebalance(TWELVE, ["d1"], {}))
    state = then(state, DriverLeft("d1", "gone"))
    assert not state.assignment and state.generation == 1
    assert not rebalance(state, ["d2"], {}), "d2 never reported the current generation"
    stale = {"d2": MemberReport("d2", 0, frozenset())}
    assert not rebalance(state, ["d2"], stale)
    change = rebalance(state, ["d2"], {"d2": MemberReport("d2", 1, frozenset())})
    assert set(change.assigned.values()) == {"d2"} and len(change.assigned) == 12


def test_a_task_still_running_elsewhere_waits_or_goes_back_to_its_runner() -> None:
    t0, t1, t2 = (source_task_id(AB, i) for i in range(3))
    state = then(ControlState(), configs(AB, 3))
    state = commit(state, Rebalance({t0: "d1", t2: "d2"}))
    state = commit(state, Rebalance({}, (t0,)))
    gen = state.generation
    reports = {
        "d1": MemberReport("d1", gen, frozenset({t0})),
        "d2": MemberReport("d2", gen, frozenset({t0, t2})),
    }
    assert rebalance(state, ["d1", "d2"], reports).assigned == {t1: "d1"}, "t0 runs twice"
    reports["d1"] = MemberReport("d1", gen, frozenset())
    change = rebalance(state, ["d1", "d2"], reports)
    assert change.assigned == {t0: "d2", t1: "d1"}, "only d2 may run t0 until it stops it"


def test_a_driver_slow_to_stop_a_task_revoked_for_balance_does_not_get_it_back() -> None:
    """It applied the new generation but still reports the task running (its last
    records are being acknowledged): the task waits, rather than going back to it and
    being revoked again in every round."""
    drivers = ["d1", "d2", "d3", "d4"]
    before = commit(TWELVE, rebalance(TWELVE, drivers[:3], {}))
    first = rebalance(before, drivers, applied(before, drivers))
    state = commit(before, first)
    slow = first.revoked[0]
    owner = before.assignment[slow]
    reports = applied(state, drivers)
    reports[owner] = MemberReport(owner, state.generation, reports[owner].running | {slow})
    change = rebalance(state, drivers, reports)
    assert slow not in change.assigned and change.revoked == ()
    assert set(change.assigned.values()) == {"d4"} and len(change.assigned) == 2
    state = commit(state, change)
    reports = applied(state, drivers)
    assert rebalance(state, drivers, reports).assigned == {slow: "d4"}, "once it stopped"


def test_a_departed_driver_loses_its_tasks_then_the_least_loaded_get_them() -> None:
    drivers = ["d1", "d2", "d3"]
    state = commit(TWELVE, rebalance(TWELVE, drivers, {}))
    # d3 is gone but the log does not say so yet: its tasks are revoked first.
    gone = rebalance(state, ["d1", "d2"], applied(state, drivers))
    assert gone.assigned == {} and set(gone.revoked) == set(state.tasks_of("d3"))
    state = commit(state, gone)
    again = rebalance(state, ["d1", "d2"], applied(state, ["d1", "d2"]))
    assert Counter(again.assigned.values()) == {"d1": 2, "d2": 2}
    assert loads(commit(state, again)) == {"d1": 6, "d2": 6}


def test_driver_left_event_frees_the_tasks_at_once() -> None:
    drivers = ["d1", "d2", "d3"]
    state = commit(TWELVE, rebalance(TWELVE, drivers, {}))
    state = then(state, DriverLeft("d3", "no heartbeat"))
    change = rebalance(state, ["d1", "d2"], applied(state, ["d1", "d2"]))
    assert change.revoked == () and len(change.assigned) == 4


def test_must_revoke_stops_tasks_and_holds_them_back_for_one_round() -> None:
    state = then(ControlState(), configs(AB, 3), *joined("d1", "d2"))
    state = commit(state, rebalance(state, ["d1", "d2"], {}))
    t0, t1, t2 = (source_task_id(AB, i) for i in range(3))
    state = commit(state, Rebalance({}, (t2,)))
    reports = applied(state, ["d1", "d2"])
    change = rebalance(state, ["d1", "d2"], reports, must_revoke={t0, t2, "not-a-task"})
    assert change.revoked == (t0, t2), "unassigned t2 too: the new generation is the barrier"
    assert change.assigned == {}, "tasks with new configs wait until every driver read them"
    state = commit(state, change)
    after = rebalance(state, ["d1", "d2"], applied(state, ["d1", "d2"]))
    assert set(after.assigned) == {t0, t2} and t1 not in after.revoked


def test_tasks_that_no_longer_exist_are_revoked() -> None:
    state = then(ControlState(), configs(AB, 2))
    state = commit(state, rebalance(state, ["d1"], {}))
    state = commit(state, Rebalance({"ghost|MirrorSourceConnector-0": "d1"}))
    change = rebalance(state, ["d1"], applied(state, ["d1"]))
    assert change.revoked == ("ghost|MirrorSourceConnector-0",) and change.assigned == {}


def test_without_live_drivers_everything_is_revoked() -> None:
    state = commit(TWELVE, rebalance(TWELVE, ["d1", "d2"], {}))
    change = rebalance(state, [], {})
    assert change.assigned == {} and set(change.revoked) == set(TWELVE.all_task_ids())
    assert not rebalance(then(state, change.to_event(state)), [], {})


def test_a_flows_tasks_are_spread_when_loads_tie() -> None:
    state = then(ControlState(), configs(AB, 2), configs(BA, 2))
    state = commit(state, Rebalance({source_task_id(AB, 0): "d1", source_task_id(BA, 0): "d2"}))
    change = rebalance(state, ["d1", "d2"], applied(state, ["d1", "d2"]))
    assert change.assigned == {source_task_id(AB, 1): "d2", source_task_id(BA, 1): "d1"}


def test_an_empty_rebalance_is_falsy() -> None:
    assert not Rebalance() and Rebalance({}, ("t",)) and Rebalance({"t": "d"})


# --- simulation ----------------------------------------------------------------------

actions = st.lists(
    st.one_of(
        st.just(("join", 0)),
        st.tuples(st.just("leave"), st.integers(0, 9)),
        st.tuples(st.just("apply"), st.integers(0, 9)),
        st.just(("round", 0)),
        st.tuples(st.just("replan"), st.integers(0, 9)),
    ),
    max_size=60,
)


class Cluster:
    """Drivers that apply the assignment whenever the test lets them, and a coordinator."""

    def __init__(self) -> None:
        self.state = then(ControlState(), configs(AB, 5, checkpoint=2, heartbeat=True))
        self.state = then(self.state, configs(BA, 3))
        self.live: list[str] = []
        self.reports: dict[str, MemberReport] = {}
        self.joins = 0

    def join(self) -> None:
        self.joins += 1
        driver = f"d{self.joins}"
        self.state = then(self.state, *joined(driver))
        self.live.append(driver)
        self.reports[driver] = MemberReport(driver, self.state.generation, frozenset())

    def leave(self, pick: int) -> None:
        driver = self.live.pop(pick % len(self.live))
        del self.reports[driver]
        self.state = then(self.state, DriverLeft(driver, "test"))

    def apply(self, pick: int) -> None:
        driver = self.live[pick % len(self.live)]
        running = frozenset(self.state.tasks_of(driver))
        self.reports[driver] = MemberReport(driver, self.state.generation, running)

    def round(self, must_revoke: frozenset[str] = frozenset()) -> Rebalance:
        change = rebalance(self.state, self.live, self.reports, must_revoke=must_revoke)
        if change:
            for task in change.assigned:
                assert task not in self.state.assignment, f"{task} went straight to a driver"
            self.state = commit(self.state, change)
        return change

    def replan(self, count: int) -> None:
        """New task configs for AB: tasks appear or vanish, task 0 takes partitions."""
        self.state = then(self.state, configs(AB, 1 + count % 6))
        self.round(frozenset({source_task_id(AB, 0)}))

    def check(self) -> None:
        running = Counter(t for d in self.live for t in self.reports[d].running)
        twice = [task for task, n in running.items() if n > 1]
        assert not twice, f"{twice} run on two live drivers at once"

    def settle(self) -> None:
        for _ in range(4):
            for pick in range(len(self.live)):
                self.apply(pick)
            self.round()


@settings(max_examples=200)
@given(actions)
def test_no_task_ever_runs_on_two_drivers_and_the_group_settles_balanced(
    steps: list[tuple[str, int]],
) -> None:
    cluster = Cluster()
    for action, pick in steps:
        if action == "join":
            cluster.join()
        elif action == "round":
            cluster.round()
        elif action == "replan":
            cluster.replan(pick)
        elif cluster.live:
            cluster.leave(pick) if action == "leave" else cluster.apply(pick)
        cluster.check()
    cluster.settle()
    cluster.check()
    state = cluster.state
    if cluster.live:
        assert set(state.assignment) == set(state.all_task_ids()), "every task is assigned"
        counts = [len(state.tasks_of(d)) for d in cluster.live]
        assert max(counts) - min(counts) <= 1, f"unbalanced after settling: {counts}"
    else:
        assert not state.assignment
