"""The aggregator's folds wired as the service wires them, over dicts instead of Faust
tables: raw partitions into :class:`RawFolder`, contributions routed by key into
:class:`Merger` partitions, aggregated records kept as a reader keeps them (latest per
key)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from srm_common.metrics import aggregate
from srm_common.metrics.aggregate import Aggregate
from srm_common.metrics.raw import Sample, encode
from srm_common.testing import Clock
from srm_metrics_aggregator.fold_records import AGGREGATED, CONTRIBUTIONS, DEAD, Out
from srm_metrics_aggregator.fold_settings import Settings
from srm_metrics_aggregator.merger import Merger
from srm_metrics_aggregator.raw_folder import RawFolder


@dataclass
class Pipeline:
    settings: Settings = field(default_factory=lambda: Settings(windows=(60_000,), update_ms=0))
    merger_partitions: int = 3
    clock: Clock = field(default_factory=lambda: Clock(1_700_000_000_000))
    raw_state: dict[str, bytes] = field(default_factory=dict)
    merge_state: dict[str, bytes] = field(default_factory=dict)
    latest: dict[bytes, bytes] = field(default_factory=dict)
    dead: list[Out] = field(default_factory=list)
    sent: list[Out] = field(default_factory=list)
    next_offset: dict[int, int] = field(default_factory=dict)
    merged_offset: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.restart()

    def restart(self, committed: dict[int, int] | None = None) -> None:
        """A new process over the same state (what the changelogs restore), reading again
        from the ``committed`` offsets (next offset per partition) when given."""
        self.next_offset.update(committed or {})
        self.folder = RawFolder(self.raw_state, self.settings, clock=self.clock)
        self.merger = Merger(self.merge_state, self.settings, clock=self.clock)

    def feed(
        self, partition: int, value: bytes | None, key: bytes | None = None, *, lose: bool = False
    ) -> None:
        """Append a record to the raw ``partition`` and fold it at its offset (``lose``:
        what it sends is lost, as in a crash before the producer flushed)."""
        offset = self.next_offset.get(partition, 0)
        self.next_offset[partition] = offset + 1
        outs = self.folder.fold(partition, key, value, offset)
        if not lose:
            self._route(outs)

    def feed_sample(self, sample: Sample, partition: int = 0, *, lose: bool = False) -> None:
        self.feed(partition, encode(sample), sample.key(), lose=lose)

    def resend(self, raw_partitions: int = 3) -> None:
        """What the service does once a rebalance is over: every partition held sends
        its windows again."""
        for partition in range(raw_partitions):
            self._route(self.folder.resend(partition))
        for partition in range(self.merger_partitions):
            self._route(self.merger.resend(partition))

    def flush(self) -> None:
        self._route(self.folder.flush())
        self._route(self.merger.flush())

    def _route(self, outs: list[Out]) -> None:
        pending = list(outs)
        while pending:
            out = pending.pop(0)
            self.sent.append(out)
            if out.role == AGGREGATED:
                self.latest[out.key or b""] = out.value or b""
            elif out.role == DEAD:
                self.dead.append(out)
            else:
                assert out.role == CONTRIBUTIONS
                partition = zlib.crc32(out.key or b"") % self.merger_partitions
                offset = self.merged_offset.get(partition, 0)
                self.merged_offset[partition] = offset + 1
                pending.extend(self.merger.merge(partition, out.key, out.value, offset))

    def windows(self, level: str, *, closed: bool | None = None) -> list[Aggregate]:
        found = []
        for value in self.latest.values():
            record = aggregate.read(value)
            if isinstance(record, Aggregate) and record.level == level:
                if closed is None or record.closed == closed:
                    found.append(record)
        return sorted(found, key=lambda a: (a.window_ms, a.start_ms, str(a.subject)))

    def reasons(self) -> list[str]:
        return [dict(out.headers)[aggregate.REASON_HEADER].decode() for out in self.dead]
