"""The partitions a driver holds, indexed so that work follows its own size.

A slot's report and answer touch only that slot's partitions, a flow's planning only
that flow's, and placing a new partition on the least loaded slot looks at the slots'
counts, not at every partition: with 10,000 partitions held, none of these walks the
other 9,999 (the ledger's lock is held meanwhile, so every walk delays the others).
Pure bookkeeping under the ledger's lock.
"""

from __future__ import annotations

from collections.abc import Iterator, ValuesView

from srm_driver.copying.state import PartitionState

TopicPartition = tuple[str, int]


class Parts:
    """Partition states by (flow, upstream partition), by flow, and by (slot, flow)."""

    def __init__(self) -> None:
        self._all: dict[tuple[str, TopicPartition], PartitionState] = {}
        self._flows: dict[str, dict[TopicPartition, PartitionState]] = {}
        self._slots: dict[int, dict[str, dict[TopicPartition, PartitionState]]] = {}

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

    def remove(self, state: PartitionState) -> None:
        """Forget ``state`` (if it is the one held for its partition)."""
        if self._all.get((state.flow, state.key)) is not state:
            return
        del self._all[(state.flow, state.key)]
        del self._flows[state.flow][state.key]
        del self._slots[state.slot][state.flow][state.key]

    def move(self, state: PartitionState, slot: int) -> None:
        """Plan ``state`` on ``slot`` from now on."""
        if state.slot == slot:
            return
        self.remove(state)
        state.slot = slot
        self.add(state)

    def of_flow(self, flow: str) -> Iterator[PartitionState]:
        """The flow's partitions (a snapshot: safe to change the parts meanwhile)."""
        return iter(list(self._flows.get(flow, {}).values()))

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
