"""Cooperative incremental assignment of tasks to drivers (Kafka Connect's idea, KIP-415).

A task never goes from one driver straight to another: it is revoked in one round and
assigned in a later one, once every live driver reports that it applied the revocation
and no other driver still runs it. So no task ever runs on two drivers at once, and a
rebalance only stops the tasks that move. A fourth driver joining three with 12 tasks::

    round 1 (gen 5)   d1: 4 -> 3   d2: 4 -> 3   d3: 4 -> 3   revoke 3, assign none
    drivers report generation 5, the 3 revoked tasks stopped
    round 2 (gen 6)   d4: 0 -> 3                               assign those 3 to d4
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from srm_common.control.schema import AssignmentChanged
from srm_common.control.state import ControlState
from srm_common.control.task_configs import PART_BYTES


@dataclass(frozen=True, slots=True)
class MemberReport:
    """What a driver last reported: the assignment ``generation`` it has fully applied
    (stopped what was revoked, started what was assigned) and the task ids it runs now.
    A driver that joined reports the generation it read from the log, running nothing."""

    driver: str
    generation: int
    running: frozenset[str]

    def __post_init__(self) -> None:
        object.__setattr__(self, "running", frozenset(self.running))


@dataclass(frozen=True, slots=True)
class Rebalance:
    """One round's decision: ``assigned`` task id -> driver, ``revoked`` task ids.
    Falsy when it changes nothing."""

    assigned: Mapping[str, str] = field(default_factory=dict[str, str])
    revoked: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "assigned", dict(sorted(self.assigned.items())))
        object.__setattr__(self, "revoked", tuple(sorted(self.revoked)))

    def __bool__(self) -> bool:
        return bool(self.assigned or self.revoked)

    @property
    def moved(self) -> int:
        """Tasks started on a driver by this round."""
        return len(self.assigned)

    def to_event(self, state: ControlState) -> AssignmentChanged:
        """The event recording this round as assignment generation ``state.generation + 1``
        (a round small enough for one event; :meth:`to_events` for any round)."""
        return AssignmentChanged(state.generation + 1, self.assigned, self.revoked)

    def to_events(self, state: ControlState, budget: int = PART_BYTES) -> list[AssignmentChanged]:
        """The events recording this round, each of at most ``budget`` bytes of task ids
        and drivers: one in practice (tasks, not partitions, are assigned: a flow has at
        most ``tasks.max`` source tasks), several consecutive generations for a round of
        thousands of tasks. Revocations come first; a round never assigns a task it
        revokes, so the cut changes nothing of what the round decided."""
        entries = [(task, None) for task in self.revoked] + list(self.assigned.items())
        events: list[AssignmentChanged] = []
        chunk: list[tuple[str, str | None]] = []
        used = 0
        for task, driver in entries:
            size = len(task) + len(driver or "") + 8
            if chunk and used + size > budget:
                events.append(_assignment(state.generation + len(events) + 1, chunk))
                chunk, used = [], 0
            chunk.append((task, driver))
            used += size
        if chunk or not events:
            events.append(_assignment(state.generation + len(events) + 1, chunk))
        return events


def _assignment(generation: int, chunk: list[tuple[str, str | None]]) -> AssignmentChanged:
    assigned = {task: driver for task, driver in chunk if driver is not None}
    revoked = tuple(task for task, driver in chunk if driver is None)
    return AssignmentChanged(generation, assigned, revoked)


def rebalance(
    state: ControlState,
    drivers: Sequence[str],
    reports: Mapping[str, MemberReport],
    *,
    must_revoke: Collection[str] = (),
    waiting: Collection[str] = (),
) -> Rebalance:
    """The next step towards every task of ``state`` on one of the live ``drivers``, each
    holding ``floor(n/d)`` or ``ceil(n/d)`` of the ``n`` tasks.

    Revoked: assignments of tasks that no longer exist or whose driver is not live; a
    driver's tasks beyond its share (the last in task order); and every task in
    ``must_revoke`` (tasks whose new config takes partitions from another task). The
    latter are revoked even when unassigned: the new generation then proves that every
    driver has read the new task configs before any of them restarts. Pass them once,
    in the round right after the configs changed.

    Assigned, only if every live driver reports ``generation >= state.generation`` (no
    report counts as not applied, except before anything was ever assigned): tasks
    unassigned in ``state`` and not in ``must_revoke``, each to the live driver with the
    fewest tasks, then the fewest of the same flow, then the lowest id, among those that
    no other live driver reports running it (a task still reported running goes back to
    its runner only within that driver's share, else waits until it stopped there). A
    new group (no assignment at all) is dealt round robin in task order
    (:meth:`ControlState.all_task_ids`). ``waiting`` tasks are not assigned (their last
    driver left without its word, and its writes are being waited out). What cannot be
    assigned yet waits for a later round.
    """
    tasks = state.all_task_ids()
    order = {task: position for position, task in enumerate(tasks)}
    alive = set(drivers)
    live = sorted(alive)
    forced = set(must_revoke) & order.keys()
    revoked = forced | {
        task for task, owner in state.assignment.items() if task not in order or owner not in alive
    }
    if not live:
        return Rebalance({}, tuple(revoked))
    kept: dict[str, list[str]] = {driver: [] for driver in live}
    for task in sorted(state.assignment.keys() - revoked, key=order.__getitem__):
        kept[state.assignment[task]].append(task)
    # The drivers that kept the most get the larger shares, so the fewest tasks move.
    base, extra = divmod(len(tasks), len(live))
    shares: dict[str, int] = {}
    for rank, driver in enumerate(sorted(live, key=lambda d: (-len(kept[d]), d))):
        share = shares[driver] = base + (1 if rank < extra else 0)
        revoked.update(kept[driver][share:])
        del kept[driver][share:]
    held_back = forced | set(waiting)
    candidates = [t for t in tasks if t not in state.assignment and t not in held_back]
    if not candidates or not _all_applied(state, live, reports):
        return Rebalance({}, tuple(revoked))
    runners = _runners(live, reports)
    if not state.assignment:
        assigned = {
            task: live[order[task] % len(live)]
            for task in candidates
            if runners.get(task, set[str]()) <= {live[order[task] % len(live)]}
        }
    else:
        assigned = _least_loaded(candidates, kept, runners, shares)
    return Rebalance(assigned, tuple(revoked))


def _all_applied(
    state: ControlState, live: Sequence[str], reports: Mapping[str, MemberReport]
) -> bool:
    for driver in live:
        report = reports.get(driver)
        if report is None and state.generation != 0:
            return False
        if report is not None and report.generation < state.generation:
            return False
    return True


def _runners(live: Sequence[str], reports: Mapping[str, MemberReport]) -> dict[str, set[str]]:
    """Task id -> the live drivers that report running it."""
    runners: dict[str, set[str]] = {}
    for driver in live:
        report = reports.get(driver)
        for task in report.running if report else ():
            runners.setdefault(task, set()).add(driver)
    return runners


def _least_loaded(
    candidates: Sequence[str],
    kept: Mapping[str, list[str]],
    runners: Mapping[str, set[str]],
    shares: Mapping[str, int],
) -> dict[str, str]:
    load = {driver: len(tasks) for driver, tasks in kept.items()}
    per_flow = {driver: Counter(_flow(task) for task in tasks) for driver, tasks in kept.items()}
    assigned: dict[str, str] = {}
    for task in candidates:
        flow = _flow(task)
        running = runners.get(task, set[str]())
        # A task still running somewhere goes back only to that driver, and only within
        # its share: a driver slow to stop a task revoked from it for balance would
        # otherwise get it back, lose it again, and so on every round.
        eligible = [d for d in load if running <= {d} and (not running or load[d] < shares[d])]
        if not eligible:
            continue  # still running where it cannot stay: wait until it stops there
        driver = min(eligible, key=lambda d: (load[d], per_flow[d][flow], d))
        assigned[task] = driver
        load[driver] += 1
        per_flow[driver][flow] += 1
    return assigned


def _flow(task_id: str) -> str:
    return task_id.rpartition("|")[0]
