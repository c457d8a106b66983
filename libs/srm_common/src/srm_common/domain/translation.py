"""Consumer group offset translation between a source partition and its copy: pure.

A group's committed offset ``c`` on a partition means "every record before ``c`` was
read; the next read returns the first record at or after ``c``". Its translation on the
other side of the copy is the offset of the copy of that very record, so a consumer that
moves there neither skips a record it did not read nor reads one again.

What the copy tells us: offset syncs ``(upstream, downstream)`` of single copies, written
at the first and last copy of every batch and on both sides of every upstream gap
(:func:`srm_common.domain.progress.offset_syncs`), and the recorded progress (the next
upstream offset to copy, and where its copy will land). On a remote partition that only
the copy writes (any prefixing policy: fencing keeps it to one writer), each copy takes
exactly one downstream offset and at least one upstream offset, so between two syncs:

* equal distances upstream and downstream mean every offset in between was copied one to
  one (a gap would have made the downstream distance shorter);
* a downstream distance of one means the two are consecutive copies, whatever lies
  between them upstream (compacted away, transaction markers, records not copied);
* anything else means syncs are missing there (compacted away): no exact answer.

MirrorMaker 2 answers ``downstream + 1`` of the nearest sync below (so failed-over
consumers read records again); we answer exactly or decline with the reason.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

Point = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Translation:
    """The translated offset, or None and why not (for the task status and the CLI)."""

    offset: int | None
    reason: str = ""

    @property
    def exact(self) -> bool:
        return self.offset is not None


def translate(
    syncs: Sequence[Point],
    offset: int,
    *,
    position: Point | None = None,
    next_record: int | None = None,
    shared: bool = False,
) -> Translation:
    """Where a group at ``offset`` continues on the other side of the copy.

    Invariant: the answer is the offset of the copy of the first copied record at or
    after ``offset`` (the record the group reads next), or None when that cannot be
    proven from the syncs. Forward (source to remote) pass ``syncs`` as ``(upstream,
    downstream)`` and ``position`` as the progress ``(next upstream, next downstream)``;
    backward (failback) pass the syncs swapped and no position. ``next_record``: the
    offset of the first source record after the last sync (what the copy takes next),
    when the caller looked. ``syncs`` must be one copy epoch, strictly
    increasing on both sides (:class:`SyncHistory` keeps them so). ``shared``: other
    producers write the remote partition too (identity policy): then only offsets at a
    sync or right after one are exact.
    """
    if not syncs:
        return Translation(None, "no offset sync for this partition yet")
    first_up = syncs[0][0]
    if offset < first_up:
        return Translation(
            None, f"offset {offset} is older than the sync history (which starts at {first_up})"
        )
    index = bisect.bisect_left(syncs, (offset, -1))
    if index < len(syncs):
        up, down = syncs[index]
        if up == offset:
            return Translation(down)
        (a_up, a_down), (b_up, b_down) = syncs[index - 1], syncs[index]
        if b_down == a_down + 1:
            return Translation(b_down)
        if not shared and b_up - a_up == b_down - a_down:
            return Translation(a_down + offset - a_up)
        return Translation(
            None,
            f"offset syncs between {a_up} and {b_up} are missing (compacted?) and the copy"
            " has gaps there",
        )
    last_up, last_down = syncs[-1]
    if shared:
        return Translation(None, f"the group is past the last offset sync ({last_up})")
    if offset == last_up + 1 or (next_record is not None and last_up < offset <= next_record):
        return Translation(last_down + 1)  # the next copy lands there, and it is at or past
    if position is not None:
        next_up, next_down = position
        if last_up < next_up and offset <= next_up and next_down == last_down + 1:
            return Translation(next_down)
        if offset > next_up:
            return Translation(
                None, f"the group is ahead of the copy (copied up to {next_up}); wait for it"
            )
    return Translation(None, f"the group is past the last offset sync ({last_up})")


class SyncHistory:
    """The offset syncs of one partition, as read in order: one copy epoch, compressed.

    A sync whose upstream is not past the last one starts a new epoch (the copy restarted
    from an earlier offset: an operator resume or a recreated topic) and replaces the
    history, as MirrorMaker 2's store does; unless it says what the history says already
    (a restart after a kill writes the syncs of the copies it verified, below those the
    killed driver wrote): then it changes nothing. Inside runs copied one to one only the ends
    are kept, so memory grows with gaps, not with batches; nothing exact is lost.
    """

    __slots__ = ("_points", "shared")

    def __init__(self, *, shared: bool = False) -> None:
        self._points: list[Point] = []
        self.shared = shared

    def add(self, upstream: int, downstream: int) -> None:
        points = self._points
        if points and (upstream <= points[-1][0] or downstream <= points[-1][1]):
            if _agrees(points, upstream, downstream, self.shared):
                return  # written again (a restart's verified copies): nothing new
            points.clear()
        points.append((upstream, downstream))
        if self.shared or len(points) < 3:
            return
        (a_up, a_down), (b_up, b_down), (c_up, c_down) = points[-3:]
        if b_up - a_up == b_down - a_down and c_up - b_up == c_down - b_down:
            del points[-2]

    def forget_before(self, upstream: int) -> None:
        """Drop syncs no group at or after ``upstream`` needs (keeps the one below it)."""
        index = bisect.bisect_right(self._points, (upstream, float("inf"))) - 1
        if index > 0:
            del self._points[:index]

    @property
    def points(self) -> tuple[Point, ...]:
        return tuple(self._points)

    def forward(
        self, offset: int, position: Point | None = None, next_record: int | None = None
    ) -> Translation:
        """A source offset's translation on the remote partition (see :func:`translate`)."""
        return translate(
            self._points, offset, position=position, next_record=next_record, shared=self.shared
        )

    def past_last(self, offset: int) -> bool:
        """``offset`` is beyond the last sync plus one: only a look at the source decides."""
        return bool(self._points) and offset > self._points[-1][0] + 1

    def backward(self, offset: int) -> Translation:
        """A remote offset's translation back on the source partition (failback): the
        upstream offset of the first copy at or after ``offset``."""
        swapped = [(down, up) for up, down in self._points]
        return translate(swapped, offset, shared=self.shared)

    def conservative_forward(self, offset: int) -> int | None:
        """MirrorMaker 2's answer where ours declines: the copy of the nearest synced
        record at or before ``offset`` (re-reads what lies between, never skips)."""
        index = bisect.bisect_right(self._points, (offset, float("inf"))) - 1
        return self._points[index][1] if index >= 0 else None

    def conservative_backward(self, offset: int) -> int | None:
        """The same backwards: the source offset of the nearest synced copy at or before."""
        downs = [down for _up, down in self._points]
        index = bisect.bisect_right(downs, offset) - 1
        return self._points[index][0] if index >= 0 else None

    def __len__(self) -> int:
        return len(self._points)


def _agrees(points: list[Point], upstream: int, downstream: int, shared: bool) -> bool:
    """Whether the sync ``(upstream, downstream)`` is one of ``points`` or (not shared)
    lies inside a run they keep as copied one to one."""
    index = bisect.bisect_right(points, (upstream, float("inf"))) - 1
    if index < 0:
        return False  # before the history kept: an older epoch or a new one, unknown
    a_up, a_down = points[index]
    if a_up == upstream:
        return a_down == downstream
    if shared or index + 1 == len(points):
        return False
    b_up, b_down = points[index + 1]
    return b_up - a_up == b_down - a_down and downstream - a_down == upstream - a_up
