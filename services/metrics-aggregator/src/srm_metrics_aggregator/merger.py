"""The windows above the partition (topic, flow, cluster), from the contributions of the
windows below them. Pure: state is a ``MutableMapping[str, bytes]`` (a Faust table with a
changelog in the service, a dict in tests); each call returns the records to send.

An *entry* is one window of one subject above the partition. Each contribution is kept
as a *part* of its entry, in a state key of its own::

    x|<contributions partition>|<aggregate key>|<origin>   the part: window, closed, final, figures
    v|<contributions partition>|<window size>              the latest window end merged
    o|<contributions partition>                            the offset after the last record merged

A final part (a partition's closed window) is added to its entry for good and a
contribution from the same origin again is a duplicate; another part is replaced by its
next update. One merge writes one part (and then the offset), so a crash between two
writes can neither lose nor double a part: the state is the set of parts, never a sum
of them. What an entry shows is computed from its parts in memory.

**Work follows what changed.** A flow of 1,000 topics has 1,000 parts per window; an
update of one topic replaces one part and writes one key, and the entry's total is
computed only when it is sent: at once when it closes (or opens again), else at most
every :meth:`Settings.update_s` (:meth:`Merger.flush` sends what waited). An entry's
``closed`` is kept as a count of its open parts, so knowing it costs nothing.

State written by the previous release (one record per entry, ``u|...``, with every part
in it) is read and rewritten as parts when its partition is first used.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from srm_common.metrics import aggregate
from srm_common.metrics.aggregate import Aggregate, Figures

from srm_metrics_aggregator.fold_records import (
    AGGREGATED,
    Out,
    compact_json,
    contribution_of,
    dead_letter,
)
from srm_metrics_aggregator.fold_settings import Settings
from srm_metrics_aggregator.fold_state import Store, once, scan_keys


@dataclass
class _Entry:
    """One window of a subject above the partition, from its parts (in memory)."""

    window: Aggregate  # figures and closed: as last sent
    final: Figures = field(default_factory=Figures)
    final_ids: set[str] = field(default_factory=set)
    parts: dict[str, tuple[bool, Figures]] = field(default_factory=dict)
    open_parts: int = 0
    sent_at: float | None = None

    @property
    def closed(self) -> bool:
        return self.open_parts == 0

    def total(self) -> Figures:
        return Figures.total([self.final, *(f for _c, f in self.parts.values())])

    def take(self, origin: str, closed: bool, final: bool, figures: Figures) -> None:
        previous = self.parts.pop(origin, None)
        if previous is not None and not previous[0]:
            self.open_parts -= 1
        if final:
            self.final = self.final + figures
            self.final_ids.add(origin)
            return
        self.parts[origin] = (closed, figures)
        if not closed:
            self.open_parts += 1

    def origins(self) -> set[str]:
        return self.final_ids | set(self.parts)


def _window_of(data: Any) -> Aggregate:
    level, size, start, subject = data
    return Aggregate(level, size, start, subject, False, Figures())


def _window_json(window: Aggregate) -> list[Any]:
    return [window.level, window.window_ms, window.start_ms, dict(window.subject)]


class Merger:
    """Contributions to the windows above the partition (topic, flow, cluster)."""

    def __init__(
        self, store: Store, settings: Settings, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.counts: Counter[str] = Counter()
        # partition -> aggregate key -> entry
        self._entries: dict[int, dict[str, _Entry]] = {}
        self._scanned: dict[int, list[str]] | None = None
        self._dirty: dict[tuple[int, str], float] = {}  # waiting to be sent: when due

    def reset(self) -> None:
        self._entries.clear()
        self._scanned = None
        self._dirty.clear()

    def next_offset(self, partition: int) -> int | None:
        """As :meth:`RawFolder.next_offset`, for the contributions topic."""
        done = self.store.get(f"o|{partition}")
        return int(done) + 1 if done is not None else None

    def merge(
        self, partition: int, key: bytes | None, value: bytes | None, offset: int | None = None
    ) -> list[Out]:
        """The records that merging one contribution (at ``offset``) sends."""
        outs = self._ensure(partition)
        return once(self.store, self.counts, partition, offset, outs, self._merge, key, value)

    def _merge(self, partition: int, key: bytes | None, value: bytes | None) -> list[Out]:
        try:
            data = json.loads(value or b"")
            window = Aggregate(
                data["level"],
                data["window_ms"],
                data["start_ms"],
                data["subject"],
                False,
                Figures(),
            )
            origin, closed, final = str(data["from"]), bool(data["closed"]), bool(data["final"])
            figures = Figures.from_json(data["figures"])
        except (ValueError, KeyError, TypeError, aggregate.AggregateError) as exc:
            self.counts["unreadable"] += 1
            return [dead_letter(key, value, f"contribution: {exc}")]
        entry_key = window.key().decode()
        entries = self._entries[partition]
        entry = entries.get(entry_key)
        watermark = self.watermark(partition, window.window_ms)
        if entry is None and watermark >= window.end_ms + self.settings.retention_ms(
            window.window_ms
        ):
            self.counts["late"] += 1
            reason = f"late: contribution to {partition}|{entry_key} after its entry was deleted"
            return [dead_letter(key, value, reason)]
        if entry is None:
            entry = entries[entry_key] = _Entry(window)
        outs: list[Out] = []
        if origin in entry.final_ids:
            self.counts["duplicate"] += 1
        else:
            entry.take(origin, closed, final, figures)
            part = {
                "window": _window_json(window),
                "closed": closed,
                "final": final,
                "figures": figures.to_json(),
            }
            self.store[_part_key(partition, entry_key, origin)] = compact_json(part)
            outs.extend(self._show(partition, entry_key, entry))
            self.counts["merged"] += 1
        self._advance(partition, window.window_ms, window.end_ms)
        return outs

    def _show(
        self, partition: int, entry_key: str, entry: _Entry, *, due: bool = False
    ) -> list[Out]:
        """The entry's window and its contribution above: at once when it closes or
        opens, else at most every ``update_s`` (a changed entry waits for :meth:`flush`)."""
        now = self.clock()
        shown = entry.window
        if (
            not due
            and entry.closed == shown.closed
            and entry.sent_at is not None
            and now - entry.sent_at < self.settings.update_s(shown.window_ms)
        ):
            self._dirty.setdefault(
                (partition, entry_key), entry.sent_at + self.settings.update_s(shown.window_ms)
            )
            return []
        self._dirty.pop((partition, entry_key), None)
        figures = entry.total()
        if shown.figures == figures and shown.closed == entry.closed and entry.sent_at:
            return []
        entry.window = shown.with_figures(figures, entry.closed)
        entry.sent_at = now
        return self._send(entry.window)

    def flush(self) -> list[Out]:
        """The entries whose update waited :meth:`Settings.update_s` (a timer calls this;
        it writes no state)."""
        now = self.clock()
        outs: list[Out] = []
        for place, at in list(self._dirty.items()):
            if now < at:
                continue
            del self._dirty[place]
            entry = self._entries.get(place[0], {}).get(place[1])
            if entry is not None:
                outs.extend(self._show(place[0], place[1], entry, due=True))
        return outs

    @staticmethod
    def _send(window: Aggregate) -> list[Out]:
        outs = [Out(AGGREGATED, window.key(), aggregate.encode(window))]
        contribution = contribution_of(
            window.level,
            window.window_ms,
            window.start_ms,
            dict(window.subject),
            window.key().decode(),
            window.figures,
            closed=window.closed,
            final=False,
        )
        if contribution is not None:
            outs.append(contribution)
        return outs

    def watermark(self, partition: int, size_ms: int) -> int:
        """The latest end of a window of ``size_ms`` contributed to on ``partition``."""
        stored = self.store.get(f"v|{partition}|{size_ms}")
        return int(stored) if stored is not None else -1

    def _advance(self, partition: int, size_ms: int, end_ms: int) -> None:
        """Raise the watermark of ``size_ms`` windows; delete the entries it retires."""
        if end_ms <= self.watermark(partition, size_ms):
            return
        self.store[f"v|{partition}|{size_ms}"] = str(end_ms).encode()
        entries = self._entries[partition]
        horizon = end_ms - self.settings.retention_ms(size_ms)
        for entry_key, entry in list(entries.items()):
            window = entry.window
            if window.window_ms == size_ms and window.end_ms <= horizon:
                for origin in entry.origins():
                    self.store.pop(_part_key(partition, entry_key, origin), None)
                del entries[entry_key]
                self._dirty.pop((partition, entry_key), None)
                self.counts["retired"] += 1

    def resend(self, partition: int) -> list[Out]:
        """As :meth:`RawFolder.resend`: every entry of ``partition`` sent again, once
        after each reset."""
        return self._ensure(partition)

    def _ensure(self, partition: int) -> list[Out]:
        if partition in self._entries:
            return []
        if self._scanned is None:
            self._scanned = scan_keys(self.store.keys(), "x")
            for p, keys in scan_keys(self.store.keys(), "u").items():
                self._scanned.setdefault(p, []).extend(keys)
        entries: dict[str, _Entry] = {}
        for key in self._scanned.pop(partition, []):
            if key.startswith("u|"):
                self._upgrade(partition, key, entries)
                continue
            part = json.loads(self.store[key])
            window = _window_of(part["window"])
            entry_key = window.key().decode()
            origin = key[len(f"x|{partition}|{entry_key}|") :]
            entry = entries.setdefault(entry_key, _Entry(window))
            entry.take(origin, part["closed"], part["final"], Figures.from_json(part["figures"]))
        self._entries[partition] = entries
        outs: list[Out] = []
        for entry in entries.values():
            entry.window = entry.window.with_figures(entry.total(), entry.closed)
            entry.sent_at = self.clock()
            outs.extend(self._send(entry.window))
        return outs

    def _upgrade(self, partition: int, key: str, entries: dict[str, _Entry]) -> None:
        """An entry as the previous release stored it, rewritten as parts: its final sum
        as one final part, each final origin as a final part of nothing (so a copy of it
        is still a duplicate), and its other parts as they were."""
        data = json.loads(self.store[key])
        window = _window_of(data["window"])
        entry_key = window.key().decode()
        entry = entries.setdefault(entry_key, _Entry(window))
        if UPGRADED in entry.final_ids:  # rewritten before a crash kept the old from going
            del self.store[key]
            return
        parts = [(UPGRADED, True, True, Figures.from_json(data["final"]))]
        parts += [(origin, True, True, Figures()) for origin in data["final_ids"]]
        parts += [(o, c, False, Figures.from_json(f)) for o, (c, f) in data["parts"].items()]
        for origin, closed, final, figures in parts:
            entry.take(origin, closed, final, figures)
            part = {
                "window": _window_json(window),
                "closed": closed,
                "final": final,
                "figures": figures.to_json(),
            }
            self.store[_part_key(partition, entry_key, origin)] = compact_json(part)
        del self.store[key]


UPGRADED = "(earlier release)"
"""The origin of an upgraded entry's final sum."""


def _part_key(partition: int, entry_key: str, origin: str) -> str:
    return f"x|{partition}|{entry_key}|{origin}"
