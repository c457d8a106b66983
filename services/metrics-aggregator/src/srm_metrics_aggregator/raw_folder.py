"""The aggregator's first fold, pure: raw samples into windows (:class:`RawFolder`); the
second, windows of many subjects into the figures of the subject above them, is
:class:`~srm_metrics_aggregator.merger.Merger`.
No Kafka or Faust here: state is a ``MutableMapping[str, bytes]`` (a Faust table with a
changelog in the service, a dict in tests) and each call returns the records to send.

Where things go::

    raw partition p (samples keyed by subject)
        RawFolder, state "c|p|size|start|kind|subject" (cells), "w|p" (watermark)
          -> aggregated: partition and group windows
          -> contributions, keyed by the subject above:
               partition window -> topic;  group window, flow-on-a-driver window -> flow
    contributions partition q (keyed by the subject above)
        Merger, state "u|q|<aggregate key>" (entries), "v|q" (its watermark)
          -> aggregated: topic, flow and cluster windows
          -> contributions: topic -> flow -> cluster

**Closing, and late samples.** Each raw partition has a watermark: the largest ``at_ms``
read on it (samples later than the aggregator's clock by more than
:attr:`Settings.future_ms` are refused, so one wrong clock cannot close everything). A
window ``[start, end)`` of size ``s`` closes when the watermark reaches ``end + grace``
(``grace = min(s, Settings.grace_ms)``); its cells are then written once more, closed,
and are final. A sample for a closed window is *late*: it changes nothing and goes to the
dead-letter topic with the reason (it still counts in its other, open, windows: a sample
late for its minute may be on time for its hour). The cells of a closed window are kept
:meth:`Settings.keep_ms` longer (one window, at least ten minutes), so a sample delivered
again in that time is
recognised as a duplicate and dropped without a dead letter; after that a window's cells
are deleted and anything for it is late.

**Duplicates.** A cell keeps the ids it folded: the same sample read twice (a driver's
retry, the aggregator's own replay after a crash: Faust commits offsets after the state
changes it caused) is folded once. Contributions replace the previous one from the same
subject, so sending one twice changes nothing either.

**Above the partition.** A topic's window is the sum of its partitions' windows; a
partition's closed window is final and is added for good (only its id is kept), an open
one is kept aside and replaced by its next update. An entry above is ``closed`` when every
contribution it has is closed; a contribution arriving after that (a partition whose
instance was down) makes it open or changes it, and it is written again: readers keep the
latest record of each key, which converges to the exact figures. Entries are deleted
:meth:`Settings.retention_ms` after their window ended (by the merger's watermark: the
latest window end it saw); a contribution older than that goes to the dead-letter topic.

**Updates while open.** A changed open cell is sent at once, then at most every
:meth:`Settings.update_s` (``update_ms``, an hour window every minute;
:meth:`RawFolder.flush` sends what waited); closing sends it
at once.

**After a restart or a rebalance** (:meth:`RawFolder.reset`, :meth:`Merger.reset`), each
partition held rebuilds its index from the state and sends every cell and entry again
(:meth:`RawFolder.resend`, :meth:`Merger.resend`, or its first record): sending twice is
harmless, and what the crash lost is sent. A record read again after a crash changes no
state (its effects are there), so it sends nothing by itself.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from srm_common.metrics import aggregate, raw
from srm_common.metrics.aggregate import Aggregate
from srm_common.metrics.raw import (
    FlowSample,
    GroupSample,
    PartitionSample,
    PartitionsSample,
    RawMetricError,
    Sample,
    TopicMapping,
)

from srm_metrics_aggregator.fold_records import AGGREGATED, Out, contribution_of, dead_letter
from srm_metrics_aggregator.fold_settings import Settings
from srm_metrics_aggregator.fold_state import Store, once, scan_keys
from srm_metrics_aggregator.windows import Cell, window_start


def _subject(kind: str, text: str) -> dict[str, str | int]:
    """The subject of a cell from its key part (the sample's :meth:`Sample.key`)."""
    if kind == PartitionSample.KIND:
        flow, topic, partition = text.rsplit("|", 2)
        return {"flow": flow, "topic": topic, "partition": int(partition)}
    flow, _, rest = text.partition("|")
    return {"flow": flow, "group": rest} if kind == GroupSample.KIND else {"flow": flow}


def _check(sample: Sample) -> str | None:
    """What is wrong in a sample that decodes (None: nothing)."""
    if sample.at_ms < 0 or sample.interval_ms < 0:
        return "at_ms and interval_ms must not be negative"
    if isinstance(sample, PartitionSample):
        if min(sample.records, sample.bytes, sample.lost, sample.latency_sum_ms) < 0:
            return "records, bytes, lost and latency_sum_ms must not be negative"
        if any(count < 0 for count in sample.latency.counts):
            return "latency histogram counts must not be negative"
    if isinstance(sample, FlowSample) and not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in sample.tasks.items()
    ):
        return "tasks must map statuses to whole numbers"
    return None


def _check_all(sample: Sample) -> str | None:
    """What is wrong in a sample or in a member of a group (None: nothing)."""
    if isinstance(sample, PartitionsSample):
        for member in sample.partitions:
            wrong = _check(member)
            if wrong is not None:
                return f"{member.topic}-{member.partition}: {wrong}"
        return None
    return _check(sample)


def _late(windows: list[str], watermark: int) -> str:
    return f"late: window {', '.join(windows)} closed at watermark {watermark} ms"


class RawFolder:
    """Raw samples of the partitions this instance owns, folded into window cells.

    One class of about 270 lines: folding a sample, closing and retiring windows, pacing
    updates and resending after a rebalance read and write the same per-partition index,
    decoded cells and send times, which must move in step with the store; the pure parts
    (a cell's fold, window arithmetic, contributions) are functions of other modules.
    """

    def __init__(
        self,
        store: Store,
        settings: Settings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.counts: Counter[str] = Counter()
        self._index: dict[int, dict[tuple[int, int], set[str]]] = {}
        self._closed: dict[int, set[tuple[int, int]]] = {}  # windows all written closed
        self._cells: dict[str, Cell] = {}  # decoded cells of the partitions held
        self._scanned: dict[int, list[str]] | None = None
        self._dirty: dict[str, float] = {}  # cell key -> when last sent
        self._sent: dict[str, float] = {}
        self._mapped: dict[tuple[str, str], str] = {}  # (flow, topic) -> remote topic sent

    def reset(self) -> None:
        """Forget what is held in memory (a rebalance): partitions are rebuilt from the
        state at their next record."""
        self._index.clear()
        self._closed.clear()
        self._cells.clear()
        self._scanned = None
        self._dirty.clear()
        self._sent.clear()
        self._mapped.clear()

    # -- one raw record ------------------------------------------------------------------

    def fold(
        self, partition: int, key: bytes | None, value: bytes | None, offset: int | None = None
    ) -> list[Out]:
        """The records that folding one raw record (at ``offset`` of ``partition``) sends."""
        outs = self._ensure(partition)
        return once(self.store, self.counts, partition, offset, outs, self._fold, key, value)

    def next_offset(self, partition: int) -> int | None:
        """The offset after the last record folded on ``partition`` (None: none yet). A
        record past it means records were skipped: the service reads and folds those
        first (Faust acknowledges, and may commit, records it drops in a rebalance)."""
        done = self.store.get(f"o|{partition}")
        return int(done) + 1 if done is not None else None

    def _fold(self, partition: int, key: bytes | None, value: bytes | None) -> list[Out]:
        outs: list[Out] = []
        try:
            sample = raw.decode(value)
        except RawMetricError as exc:
            self.counts["unreadable"] += 1
            return [*outs, dead_letter(key, value, str(exc))]
        wrong = _check_all(sample)
        now_ms = int(self.clock() * 1000)
        if wrong is None and sample.at_ms > now_ms + self.settings.future_ms:
            wrong = (
                f"at_ms {sample.at_ms} is {sample.at_ms - now_ms} ms ahead of the"
                f" aggregator's clock (at most {self.settings.future_ms} ms)"
            )
        if wrong is not None:
            self.counts["unreadable"] += 1
            return [*outs, dead_letter(key, value, f"{sample.KIND} sample: {wrong}")]
        if isinstance(sample, TopicMapping):
            outs.append(Out(AGGREGATED, aggregate.mapping_key(sample), value))
        elif isinstance(sample, PartitionsSample):
            outs.extend(self._fold_group(partition, key, value, sample))
        else:
            folded, late = self._fold_sample(partition, sample)
            outs.extend(folded)
            if late:
                self.counts["late"] += 1
                outs.append(dead_letter(key, value, _late(late, self.watermark(partition))))
        outs.extend(self._advance(partition, sample.at_ms))
        return outs

    def _fold_group(
        self, partition: int, key: bytes | None, value: bytes | None, group: PartitionsSample
    ) -> list[Out]:
        """Each member into its cells (one window cell per partition, as a version 1
        sample), the group's topic mappings when new, and one dead letter for the record
        when members of it were late."""
        outs: list[Out] = []
        for mapping in group.mappings():
            place = (mapping.flow, mapping.topic)
            if self._mapped.get(place) != mapping.remote_topic:
                self._mapped[place] = mapping.remote_topic
                outs.append(Out(AGGREGATED, aggregate.mapping_key(mapping), raw.encode(mapping)))
        late_members, windows = 0, []
        for member in group.partitions:
            folded, late = self._fold_sample(partition, member)
            outs.extend(folded)
            if late:
                late_members += 1
                windows = late
        if late_members:
            self.counts["late"] += 1
            reason = _late(windows, self.watermark(partition))
            outs.append(
                dead_letter(
                    key, value, f"{reason} ({late_members} of {len(group.partitions)} partitions)"
                )
            )
        return outs

    def _fold_sample(self, partition: int, sample: Sample) -> tuple[list[Out], list[str]]:
        """What folding ``sample`` into its cells sends, and the windows it was late for."""
        outs: list[Out] = []
        watermark = self.watermark(partition)
        late = []
        subject = f"{sample.KIND}|{sample.key().decode()}"
        for size in self.settings.windows:
            start = window_start(sample.at_ms, size)
            cell_key = f"c|{partition}|{size}|{start}|{subject}"
            cell = self._cell(cell_key)
            if watermark >= start + size + self.settings.grace(size):
                if cell is not None and sample.id in cell.ids:
                    self.counts["duplicate"] += 1
                else:
                    late.append(f"{start}+{size} ms (grace {self.settings.grace(size)} ms)")
                continue
            folded = (cell or Cell()).fold(sample)
            if folded is None:
                self.counts["duplicate"] += 1
                continue
            self.counts["folded"] += 1
            self._put(cell_key, folded)
            self._index[partition].setdefault((size, start), set()).add(subject)
            if cell is not None and self._shows_the_same(cell_key, cell, folded):
                continue  # an idle partition's sample: nothing a reader sees changed
            outs.extend(self._maybe_send(cell_key, folded))
        return outs, late

    def _shows_the_same(self, cell_key: str, before: Cell, after: Cell) -> bool:
        """Whether ``after`` shows what ``before`` showed and that was sent already: only
        the count of samples moved (an idle partition, its lag unchanged). Its window is
        written again when something else changes, and when it closes, with the count."""
        if cell_key in self._dirty or cell_key not in self._sent:
            return False
        return replace(after.figures, samples=before.figures.samples) == before.figures

    def _cell(self, cell_key: str) -> Cell | None:
        """The cell at ``cell_key`` (decoded once, then kept in memory until a reset)."""
        cell = self._cells.get(cell_key)
        if cell is None:
            stored = self.store.get(cell_key)
            if stored is None:
                return None
            cell = self._cells[cell_key] = Cell.from_bytes(stored)
        return cell

    def _put(self, cell_key: str, cell: Cell) -> None:
        self.store[cell_key] = cell.to_bytes()
        self._cells[cell_key] = cell

    def watermark(self, partition: int) -> int:
        stored = self.store.get(f"w|{partition}")
        return int(stored) if stored is not None else -1

    def _advance(self, partition: int, at_ms: int) -> list[Out]:
        """Raise the watermark to ``at_ms``; close and retire the windows it passes."""
        watermark = self.watermark(partition)
        if at_ms <= watermark:
            return []
        self.store[f"w|{partition}"] = str(at_ms).encode()
        return self._close(partition, at_ms)

    def _close(self, partition: int, watermark: int) -> list[Out]:
        outs: list[Out] = []
        windows = self._index[partition]
        for (size, start), subjects in sorted(windows.items()):
            end, grace = start + size, self.settings.grace(size)
            if watermark < end + grace:
                continue
            retire = watermark >= end + grace + self.settings.keep_ms(size)
            closed = self._closed.setdefault(partition, set())
            if (size, start) in closed and not retire:
                continue  # closed before: its cells are written closed already
            closed.add((size, start))
            for subject in sorted(subjects):
                cell_key = f"c|{partition}|{size}|{start}|{subject}"
                cell = self._cell(cell_key)
                assert cell is not None, cell_key
                self._dirty.pop(cell_key, None)
                if not cell.closed:
                    cell = Cell(cell.figures, cell.ids, cell.last_at_ms, cell.last_id, True)
                    self._put(cell_key, cell)
                    outs.extend(self._send(cell_key, cell))
                if retire:
                    del self.store[cell_key]
                    self._cells.pop(cell_key, None)
                    self._sent.pop(cell_key, None)
            if retire:
                del windows[(size, start)]
                closed.discard((size, start))
        return outs

    # -- sending -------------------------------------------------------------------------

    def _maybe_send(self, cell_key: str, cell: Cell) -> list[Out]:
        now = self.clock()
        last = self._sent.get(cell_key)
        if last is not None:
            wait = self.settings.update_s(int(cell_key.split("|", 3)[2]))
            if now - last < wait:
                self._dirty[cell_key] = last + wait
                return []
        self._sent[cell_key] = now
        self._dirty.pop(cell_key, None)
        return self._send(cell_key, cell)

    def flush(self) -> list[Out]:
        """The open cells whose update waited (:meth:`Settings.update_s`; a timer calls
        this; it reads the state and writes none)."""
        now = self.clock()
        due = [k for k, at in self._dirty.items() if now >= at]
        outs = []
        for cell_key in due:
            del self._dirty[cell_key]
            cell = self._cell(cell_key)
            if cell is not None:
                self._sent[cell_key] = now
                outs.extend(self._send(cell_key, cell))
        return outs

    def _send(self, cell_key: str, cell: Cell) -> list[Out]:
        """The records that show ``cell``: its own window (partitions and groups) and its
        contribution above."""
        _c, partition, size_text, start_text, kind, subject_text = cell_key.split("|", 5)
        size, start = int(size_text), int(start_text)
        subject = _subject(kind, subject_text)
        outs = []
        if kind in ("partition", "group"):
            window = Aggregate(kind, size, start, subject, cell.closed, cell.figures)
            outs.append(Out(AGGREGATED, window.key(), aggregate.encode(window)))
        origin = f"{partition}|{kind}|{subject_text}"
        level = "driver" if kind == FlowSample.KIND else kind
        contribution = contribution_of(
            level, size, start, subject, origin, cell.figures, closed=cell.closed, final=cell.closed
        )
        if contribution is not None:
            outs.append(contribution)
        return outs

    # -- after a restart or a rebalance --------------------------------------------------

    def resend(self, partition: int) -> list[Out]:
        """Index ``partition``'s cells from the state, if not done since the last reset,
        and send every one again: what a crash lost between the last commit and the kill
        is sent, whether or not another record comes (the service calls this for every
        partition it holds once a rebalance is over; it reads the state, writes none).
        Windows the watermark passed and not written closed close at the next record."""
        return self._ensure(partition)

    def _ensure(self, partition: int) -> list[Out]:
        if partition in self._index:
            return []
        if self._scanned is None:
            self._scanned = scan_keys(self.store.keys(), "c")
        windows: dict[tuple[int, int], set[str]] = {}
        outs: list[Out] = []
        for cell_key in self._scanned.pop(partition, []):
            _c, _p, size, start, subject = cell_key.split("|", 4)
            windows.setdefault((int(size), int(start)), set()).add(subject)
            cell = self._cell(cell_key)
            assert cell is not None, cell_key
            outs.extend(self._send(cell_key, cell))
        self._index[partition] = windows
        self.counts["rebuilt"] += 1
        return outs
