"""What a consumer group read across a failover, counted against what was written: the
numbered topic (every committed record's value a unique id ``b"<partition>:<seq>"``)
and the :class:`Ledger` that tells which ids were skipped and which read twice. Pure:
:mod:`srm_harness.group_scenario` writes and reads the records on real brokers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field


def record_id(partition: int, seq: int) -> bytes:
    """The value of the ``seq``-th committed record of ``partition``: ``b"<p>:<seq>"``."""
    return f"{partition}:{seq}".encode()


@dataclass
class NumberedTopic:
    """What :func:`produce_numbered` wrote: committed ids per partition in offset order,
    and the values of the records it wrote in aborted transactions (no reader with
    ``read_committed`` ever sees those; a replicator reading uncommitted data copies them
    as ordinary records)."""

    name: str
    ids: dict[int, list[bytes]] = field(default_factory=dict)
    aborted: dict[int, list[bytes]] = field(default_factory=dict)

    @property
    def committed_count(self) -> int:
        return sum(map(len, self.ids.values()))

    @property
    def aborted_count(self) -> int:
        return sum(map(len, self.aborted.values()))

    def extend(self, more: NumberedTopic) -> None:
        """Append a later round of the same topic."""
        for partition, ids in more.ids.items():
            self.ids.setdefault(partition, []).extend(ids)
        for partition, values in more.aborted.items():
            self.aborted.setdefault(partition, []).extend(values)


def _order(position: Mapping[bytes, tuple[int, int]]) -> Callable[[bytes], tuple[int, int, bytes]]:
    """Sort key: source ids by (partition, position), others after them by value."""
    return lambda value: (*position.get(value, (1 << 31, 0)), value)


@dataclass(frozen=True)
class Tally:
    """What a group's reads amount to, over one step or over all of them.

    * ``read``: records processed (foreign ones included);
    * ``skipped``: source records never read although a later record of the same source
      partition was read (for a step: those that became so in that step);
    * ``read_twice``: distinct values read more than once (for a step: those with at
      least one of their reads in that step);
    * ``extra_reads``: reads beyond the first of each value (for a step: its reads of
      values already read before, or earlier in the same step);
    * ``foreign``: values read that are no committed source record, e.g. aborted
      transactional data a replicator copied as ordinary records (each read counts);
    * ``not_reached``: source records after the last one read in their partition
      (after the step, for a step).
    """

    label: str
    read: int
    skipped: tuple[bytes, ...]
    read_twice: tuple[bytes, ...]
    extra_reads: int
    foreign: tuple[bytes, ...]
    not_reached: int

    def __str__(self) -> str:
        parts = [
            f"read {self.read}",
            f"skipped {len(self.skipped)}{_examples(self.skipped)}",
            f"read twice {len(self.read_twice)}{_examples(self.read_twice)}",
        ]
        if self.extra_reads != len(self.read_twice):
            parts.append(f"extra reads {self.extra_reads}")
        parts.append(f"foreign {len(self.foreign)}{_examples(self.foreign)}")
        parts.append(f"not reached {self.not_reached}")
        prefix = f"{self.label}: " if self.label else ""
        return prefix + ", ".join(parts)


def _examples(values: Sequence[bytes], limit: int = 3) -> str:
    if not values:
        return ""
    shown = ", ".join(v.decode(errors="replace") for v in values[:limit])
    more = ", ..." if len(values) > limit else ""
    return f" [{shown}{more}]"


class Ledger:
    """Every id one consumer group read, across clusters and steps.

    ``Ledger(topic.ids)`` knows the source: committed ids per partition in offset order
    (a remote topic holds the same ids at possibly other offsets). ``read(values,
    label)`` records one step's reads and returns that step's :class:`Tally`;
    ``tally()`` is the total. The definitions, for reads R (a multiset) and a source
    partition p with ids p[0..n):

    * h(p) = the highest i with p[i] in R (none: p adds nothing to ``skipped``);
    * skipped = { p[i] : i < h(p), p[i] not in R }  -- a hole the group went past;
    * read_twice = { v : v occurs at least twice in R };
    * foreign = reads of values that are no id of the source;
    * not_reached = #{ p[i] : i > h(p) } (all of p when h(p) is none).
    """

    def __init__(self, source: Mapping[int, Sequence[bytes]] | None = None) -> None:
        self._source: dict[int, list[bytes]] = {}
        self._position: dict[bytes, tuple[int, int]] = {}
        self._counts: Counter[bytes] = Counter()
        self.steps: list[Tally] = []
        if source:
            self.add_source(source)

    def add_source(self, source: Mapping[int, Sequence[bytes]]) -> None:
        """Append records written to the source later (a second round of production)."""
        for partition, ids in sorted(source.items()):
            known = self._source.setdefault(partition, [])
            for value in ids:
                if value in self._position:
                    raise ValueError(f"id {value!r} is already in the source")
                self._position[value] = (partition, len(known))
                known.append(value)

    def read(self, values: Iterable[bytes], label: str = "") -> Tally:
        """Record the values one step read (in any order); the step's tally."""
        step = list(values)
        before = self._counts.copy()
        skipped_before = set(self._skipped(before))
        self._counts.update(step)
        order = _order(self._position)
        in_step = set(step)
        seen: Counter[bytes] = Counter()
        extra = 0
        for value in step:
            if before[value] + seen[value] > 0:
                extra += 1
            seen[value] += 1
        tally = Tally(
            label=label,
            read=len(step),
            skipped=tuple(v for v in self._skipped(self._counts) if v not in skipped_before),
            read_twice=tuple(sorted((v for v in in_step if self._counts[v] > 1), key=order)),
            extra_reads=extra,
            foreign=tuple(sorted((v for v in step if v not in self._position), key=order)),
            not_reached=self._not_reached(self._counts),
        )
        self.steps.append(tally)
        return tally

    def tally(self, label: str = "total") -> Tally:
        """Everything read so far."""
        order = _order(self._position)
        foreign = [v for v, n in self._counts.items() if v not in self._position for _ in range(n)]
        return Tally(
            label=label,
            read=sum(self._counts.values()),
            skipped=tuple(self._skipped(self._counts)),
            read_twice=tuple(sorted((v for v, n in self._counts.items() if n > 1), key=order)),
            extra_reads=sum(n - 1 for n in self._counts.values() if n > 1),
            foreign=tuple(sorted(foreign, key=order)),
            not_reached=self._not_reached(self._counts),
        )

    @property
    def skipped(self) -> tuple[bytes, ...]:
        return tuple(self._skipped(self._counts))

    @property
    def read_twice(self) -> tuple[bytes, ...]:
        return self.tally().read_twice

    def _highest(self, counts: Counter[bytes], ids: Sequence[bytes]) -> int:
        for index in range(len(ids) - 1, -1, -1):
            if counts[ids[index]] > 0:
                return index
        return -1

    def _skipped(self, counts: Counter[bytes]) -> list[bytes]:
        skipped: list[bytes] = []
        for _partition, ids in sorted(self._source.items()):
            highest = self._highest(counts, ids)
            if highest < 0:
                continue
            skipped.extend(v for v in ids[:highest] if counts[v] == 0)
        return skipped

    def _not_reached(self, counts: Counter[bytes]) -> int:
        return sum(
            len(ids) - 1 - self._highest(counts, ids) for _p, ids in sorted(self._source.items())
        )

    def __str__(self) -> str:
        lines = [str(step) for step in self.steps]
        lines.append(str(self.tally()))
        return "\n".join(lines)
