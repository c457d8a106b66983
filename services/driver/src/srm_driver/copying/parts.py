"""The partitions a driver holds, indexed so that work follows its own size.

A slot's report and answer touch only that slot's partitions, a flow's planning only
that flow's, and placing a new partition on the least loaded slot looks at the slots'
counts, not at every partition: with 10,000 partitions held, none of these walks the
other 9,999 (the ledger's lock is held meanwhile, so every walk delays the others).

Within a slot, work follows what changed: each state tells its holder when its plan,
status or ``omitted_since`` changes (:meth:`PartitionState.watch`), so the slot's next
answer looks at the partitions *touched* since the last one (:meth:`Parts.touched`), and
reports look only at the partitions *watched* (:meth:`Parts.watched`): those that may need
something done although the slot does not list them (progress due with time alone, a
release, a plan left out of an answer). Pure bookkeeping under the ledger's lock.

Within a flow, the same signal keeps the partitions that planning must look at: those
*unsettled* (pending or being released: :meth:`Parts.unsettled`), so a flow's planning
pass over 10,000 running partitions visits none of them, the running ones whose plan
has no codec yet (:meth:`Parts.uncoded`), which are asked about every few seconds, and
the partitions *held* (not halted: :meth:`Parts.held`), which the driver's heartbeat
reports by task every second.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, ValuesView

from srm_driver.copying.state import PartitionState

Where = tuple[str, tuple[str, int]]  # (flow, upstream partition)

TopicPartition = tuple[str, int]


class Parts:
    """Partition states by (flow, upstream partition), by flow, and by (slot, flow)."""

    def __init__(self) -> None:
        self._all: dict[tuple[str, TopicPartition], PartitionState] = {}
        self._flows: dict[str, dict[TopicPartition, PartitionState]] = {}
        self._slots: dict[int, dict[str, dict[TopicPartition, PartitionState]]] = {}
        # Per slot: partitions whose plan, status or omission changed since its last answer
        # (or that came, left or moved), and those a report must look at when unlisted.
        self._touched: dict[int, set[Where]] = {}
        self._watched: dict[int, dict[Where, PartitionState]] = {}
        # Per flow: partitions pending or being released, and running ones without a codec.
        self._unsettled: dict[str, dict[TopicPartition, PartitionState]] = {}
        self._uncoded: dict[str, dict[TopicPartition, PartitionState]] = {}
        # Per flow: the partitions held (not halted), and the frozen set last handed out
        # by :meth:`held` (dropped when the set changes).
        self._held: dict[str, set[TopicPartition]] = {}
        self._held_frozen: dict[str, frozenset[TopicPartition]] = {}
        # Per flow: the partitions running, their topics (-> how many run, remote topic),
        # and those that started running since the last :meth:`take_started`.
        self._running: dict[str, set[TopicPartition]] = {}
        self._running_topics: dict[str, dict[str, list]] = {}
        self._started: dict[str, dict[TopicPartition, PartitionState]] = {}

    def __len__(self) -> int:
        return len(self._all)

    def __contains__(self, where: tuple[str, TopicPartition]) -> bool:
        return where in self._all

    def get(self, flow: str, key: TopicPartition) -> PartitionState | None:
        return self._all.get((flow, key))

    def values(self) -> ValuesView[PartitionState]:
        return self._all.values()

    def add(self, state: PartitionState) -> None:
        where = (state.flow, state.key)
        if where in self._all:
            self.remove(self._all[where])
        self._all[where] = state
        self._flows.setdefault(state.flow, {})[state.key] = state
        self._slots.setdefault(state.slot, {}).setdefault(state.flow, {})[state.key] = state
        state.watch(self._changed)
        self._changed(state)

    def remove(self, state: PartitionState) -> None:
        """Forget ``state`` (if it is the one held for its partition)."""
        where = (state.flow, state.key)
        if self._all.get(where) is not state:
            return
        del self._all[where]
        del self._flows[state.flow][state.key]
        del self._slots[state.slot][state.flow][state.key]
        state.watch(None)
        self._touched.setdefault(state.slot, set()).add(where)
        self._watched.get(state.slot, {}).pop(where, None)
        self._unsettled.get(state.flow, {}).pop(state.key, None)
        self._uncoded.get(state.flow, {}).pop(state.key, None)
        held = self._held.get(state.flow)
        if held is not None and state.key in held:
            held.discard(state.key)
            self._held_frozen.pop(state.flow, None)
        self._run(state, running=False)

    def move(self, state: PartitionState, slot: int) -> None:
        """Plan ``state`` on ``slot`` from now on."""
        if state.slot == slot:
            return
        self.remove(state)
        state.slot = slot
        self.add(state)

    # -- what changed, per slot ------------------------------------------------------------

    def _changed(self, state: PartitionState) -> None:
        where = (state.flow, state.key)
        self._touched.setdefault(state.slot, set()).add(where)
        if state.status == "releasing" or (state.omitted_since is not None and not state.stopped):
            self.watch(state)
        status, plan = state.status, state.plan
        if status == "pending" or status == "releasing":
            self._unsettled.setdefault(state.flow, {})[state.key] = state
        else:
            self._unsettled.get(state.flow, {}).pop(state.key, None)
        if status == "running" and plan is not None and not plan.codec:
            self._uncoded.setdefault(state.flow, {})[state.key] = state
        else:
            self._uncoded.get(state.flow, {}).pop(state.key, None)
        held = self._held.setdefault(state.flow, set())
        if (status != "halted") != (state.key in held):
            if status == "halted":
                held.discard(state.key)
            else:
                held.add(state.key)
            self._held_frozen.pop(state.flow, None)
        self._run(state, running=status == "running")

    def _run(self, state: PartitionState, *, running: bool) -> None:
        """Keep the flow's running partitions and their topics (see :meth:`take_started`)."""
        flow, key = state.flow, state.key
        keys = self._running.setdefault(flow, set())
        if running == (key in keys):
            return
        topics = self._running_topics.setdefault(flow, {})
        if running:
            keys.add(key)
            topics.setdefault(key[0], [0, state.remote])[0] += 1
            self._started.setdefault(flow, {})[key] = state
            return
        keys.discard(key)
        self._started.get(flow, {}).pop(key, None)
        topics[key[0]][0] -= 1
        if not topics[key[0]][0]:
            del topics[key[0]]

    def touched(self, slot: int) -> set[Where]:
        """The partitions of ``slot`` touched since the last call for it (and forget them)."""
        return self._touched.pop(slot, set())

    def watch(self, state: PartitionState) -> None:
        """Have reports of ``state``'s slot look at it until ``keep`` (see :meth:`watched`)
        says there is no more reason to."""
        self._watched.setdefault(state.slot, {})[(state.flow, state.key)] = state

    def watched(self, slot: int, keep: Callable[[PartitionState], bool]) -> list[PartitionState]:
        """The watched partitions of ``slot`` that ``keep`` still wants; the others are
        forgotten (a state is watched again when a reason comes back)."""
        held = self._watched.get(slot)
        if not held:
            return []
        found = []
        for where, state in list(held.items()):
            if self._all.get(where) is state and state.slot == slot and keep(state):
                found.append(state)
            else:
                del held[where]
        return found

    def unsettled(self, flow: str) -> list[PartitionState]:
        """The flow's partitions that are pending or being released (a snapshot)."""
        return list(self._unsettled.get(flow, {}).values())

    def uncoded(self, flow: str) -> list[PartitionState]:
        """The flow's running partitions whose plan has no codec yet (a snapshot)."""
        return list(self._uncoded.get(flow, {}).values())

    def held(self, flow: str) -> frozenset[TopicPartition]:
        """The flow's partitions not halted: the same object as long as that set is the
        same (a caller can keep what it worked out from it), built again only after a
        partition came, left, halted or was resumed."""
        frozen = self._held_frozen.get(flow)
        if frozen is None:
            frozen = self._held_frozen[flow] = frozenset(self._held.get(flow, ()))
        return frozen

    def running_topics(self, flow: str) -> dict[str, str]:
        """The topics of the flow's running partitions -> their remote topic."""
        return {topic: remote for topic, (_n, remote) in self._running_topics.get(flow, {}).items()}

    def take_started(self, flow: str) -> list[PartitionState]:
        """The flow's partitions that started running since the last call (and forget
        them): with :meth:`running_topics`, what a check of the running partitions'
        topics must look at partition by partition."""
        return list(self._started.pop(flow, {}).values())

    def of_flow(self, flow: str) -> Iterator[PartitionState]:
        """The flow's partitions (a snapshot: safe to change the parts meanwhile)."""
        return iter(list(self._flows.get(flow, {}).values()))

    def count_of_slot(self, slot: int, flow: str) -> int:
        return len(self._slots.get(slot, {}).get(flow, {}))

    def count_of_flow(self, flow: str) -> int:
        return len(self._flows.get(flow, {}))

    def keys_of_flow(self, flow: str) -> set[TopicPartition]:
        return set(self._flows.get(flow, {}))

    def of_slot(self, slot: int, flow: str | None = None) -> list[PartitionState]:
        """The partitions planned on ``slot`` (of ``flow``, else of every flow)."""
        flows = self._slots.get(slot, {})
        if flow is not None:
            return list(flows.get(flow, {}).values())
        return [state for states in flows.values() for state in states.values()]

    def flows_of_slot(self, slot: int) -> list[str]:
        """Flows with partitions on ``slot``."""
        return [flow for flow, states in self._slots.get(slot, {}).items() if states]

    def load(self, slot: int) -> int:
        return sum(len(states) for states in self._slots.get(slot, {}).values())

    def least_loaded(self, slots: int) -> int:
        """The slot below ``slots`` holding the fewest partitions (lowest first)."""
        return min(range(max(1, slots)), key=lambda slot: (self.load(slot), slot))
