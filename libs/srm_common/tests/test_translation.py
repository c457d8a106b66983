"""Offset translation against a brute-force ground truth (hypothesis).

The model: a source partition whose offsets are records or gaps (compacted away,
transaction markers); the copy takes every record, in order, into a remote partition
only it writes, reporting in batches; the syncs of each batch are what
:func:`offset_syncs` says (the rule the JVM copier is tested against). The truth for a
group at offset ``c`` is found by looking at every copy, including the ones not made yet:
the copy of the first record at or after ``c``. Translation may decline; it may never be
wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st
from srm_common.domain.progress import offset_syncs
from srm_common.domain.translation import SyncHistory, Translation, translate


@dataclass
class Copy:
    start: int
    kinds: list[bool]  # per upstream offset from start: True a record, False a gap
    first_down: int
    batches: list[int]  # copies per batch, in order
    synced_batches: int  # batches whose syncs are written (the rest not yet copied)

    def pairs(self) -> list[tuple[int, int]]:
        ups = [self.start + i for i, record in enumerate(self.kinds) if record]
        return [(up, self.first_down + i) for i, up in enumerate(ups)]

    def batch_pairs(self) -> list[list[tuple[int, int]]]:
        pairs, out, at = self.pairs(), [], 0
        for size in self.batches:
            out.append(pairs[at : at + size])
            at += size
        return [b for b in out if b]

    def syncs(self) -> list[tuple[int, int]]:
        written = []
        for batch in self.batch_pairs()[: self.synced_batches]:
            written += offset_syncs(batch, shared=False)
        return written

    @property
    def end(self) -> int:
        return self.start + len(self.kinds)

    def truth_forward(self, offset: int) -> int:
        """The downstream offset of the copy of the first record at or after ``offset``."""
        pairs = self.pairs()
        return next((d for u, d in pairs if u >= offset), self.first_down + len(pairs))

    def gaps_only(self, low: int, high: int) -> bool:
        """No record between upstream offsets ``low`` (inclusive) and ``high``."""
        return all(not self.kinds[o - self.start] for o in range(low, high) if o < self.end)


@st.composite
def copies(draw: st.DrawFn) -> Copy:
    kinds = draw(st.lists(st.booleans() | st.just(True), min_size=1, max_size=60))
    records = sum(kinds)
    batches: list[int] = []
    while sum(batches) < records:
        batches.append(draw(st.integers(1, 8)))
    return Copy(
        start=draw(st.integers(0, 5)),
        kinds=kinds,
        first_down=draw(st.integers(0, 5)),
        batches=batches,
        synced_batches=draw(st.integers(0, len(batches))),
    )


def history(syncs: list[tuple[int, int]]) -> SyncHistory:
    h = SyncHistory()
    for up, down in syncs:
        h.add(up, down)
    return h


@settings(max_examples=400)
@given(copies(), st.data())
def test_a_forward_translation_is_the_copy_of_the_next_record_or_none(copy: Copy, data) -> None:  # type: ignore[no-untyped-def]
    syncs = copy.syncs()
    dropped = data.draw(st.sets(st.integers(0, max(len(syncs) - 2, 0))))
    kept = [s for i, s in enumerate(syncs) if i not in dropped or i == len(syncs) - 1]
    position = None
    if syncs:
        last_up, last_down = syncs[-1]
        next_copy = next((u for u, _ in copy.pairs() if u > last_up), copy.end)
        position = (data.draw(st.integers(last_up + 1, next_copy)), last_down + 1)
    h = history(kept)
    look = data.draw(st.booleans())
    for offset in range(copy.start - 2, copy.end + 1):
        next_record = None
        if look and syncs:
            next_record = next((u for u, _ in copy.pairs() if u > syncs[-1][0]), copy.end)
        got = h.forward(offset, position, next_record)
        if got.offset is not None:
            assert got.offset == copy.truth_forward(offset), (offset, kept, position, got)
        elif not dropped and syncs and syncs[0][0] <= offset <= syncs[-1][0] + 1:
            raise AssertionError(f"{offset} untranslated with every sync: {got.reason}")
        elif next_record is not None and syncs[-1][0] < offset <= next_record:
            raise AssertionError(f"{offset} untranslated though the source was looked at")


@settings(max_examples=400)
@given(copies())
def test_a_backward_translation_lands_before_no_unread_record(copy: Copy) -> None:
    h = history(copy.syncs())
    synced = [p for b in copy.batch_pairs()[: copy.synced_batches] for p in b]
    for down in range(copy.first_down - 1, copy.first_down + len(synced) + 1):
        got = h.backward(down)
        if got.offset is None:
            continue
        # the group read every copy before `down` on the remote side: on the source it
        # must continue at the first record whose copy it did not read.
        truth = next((u for u, d in copy.pairs() if d >= down), copy.end)
        low, high = sorted((got.offset, truth))
        assert copy.gaps_only(low, high), (down, copy.syncs(), got, truth)


def test_runs_keep_only_their_ends_and_stay_exact() -> None:
    h = history([(0, 0), (99, 99), (100, 100), (199, 199), (205, 200), (206, 201)])
    assert h.points == ((0, 0), (199, 199), (205, 200), (206, 201))
    assert h.forward(150) == Translation(150)
    assert h.forward(200) == Translation(200)  # 200..204 are gaps: the next record is 205
    assert h.forward(207) == Translation(202)


def test_an_earlier_upstream_starts_a_new_epoch() -> None:
    h = history([(10, 0), (20, 10), (0, 11), (5, 16)])
    assert h.points == ((0, 11), (5, 16))
    assert h.forward(15).offset is None


def test_declines_say_why() -> None:
    assert "no offset sync" in translate([], 5).reason
    assert "older than" in translate([(10, 0)], 5).reason
    missing = translate([(0, 0), (10, 3)], 5)
    assert missing.offset is None and "missing" in missing.reason
    ahead = translate([(0, 0)], 9, position=(3, 1))
    assert ahead.offset is None and "ahead of the copy" in ahead.reason


def test_shared_remote_partitions_are_exact_only_at_syncs() -> None:
    syncs = [(0, 0), (5, 5)]
    assert translate(syncs, 3, shared=True).offset is None
    assert translate(syncs, 5, shared=True) == Translation(5)
    assert translate([(0, 0), (5, 9)], 3, shared=True).offset is None
    assert translate([(0, 0), (5, 1)], 3, shared=True) == Translation(1)


def test_forget_before_keeps_what_later_groups_need() -> None:
    h = history([(0, 0), (10, 1), (20, 2), (30, 3)])
    h.forget_before(25)
    assert h.points == ((20, 2), (30, 3))
    assert h.forward(25) == Translation(3)


def test_forgetting_below_a_commit_keeps_that_commit_exact() -> None:
    h = history([(0, 0), (5, 1), (9, 2), (10, 3), (20, 13), (25, 14)])
    before = [h.forward(c) for c in range(12, 27)]
    h.forget_before(12)
    assert [h.forward(c) for c in range(12, 27)] == before
    assert h.forward(3).offset is None


def test_syncs_written_again_after_a_restart_keep_the_history() -> None:
    """A driver killed after writing syncs up to 199; the next one verifies the copies
    past the recorded progress (120..199) and writes their syncs again, then copies on:
    every offset before the restart still translates."""
    h = history([(0, 0), (99, 99), (100, 100), (199, 199)])
    for up in (120, 150, 199):
        h.add(up, up)
    h.add(200, 200)
    h.add(250, 250)
    assert h.points == ((0, 0), (250, 250))
    assert h.forward(10) == Translation(10) and h.forward(150) == Translation(150)


def test_a_sync_that_disagrees_with_the_history_still_starts_a_new_epoch() -> None:
    h = history([(0, 0), (199, 199)])
    h.add(150, 151)  # not what the run says: the copy started again
    assert h.points == ((150, 151),)
    gaps = history([(0, 0), (10, 3), (20, 13)])  # 1..9 are gaps: no one-to-one run
    gaps.add(5, 1)
    assert gaps.points == ((5, 1),)
    shared = SyncHistory(shared=True)
    for up, down in [(0, 0), (10, 10)]:
        shared.add(up, down)
    shared.add(5, 5)  # inside: a shared partition keeps no runs
    assert shared.points == ((5, 5),)
    shared.add(7, 7)
    shared.add(5, 5)  # one of its points: unchanged
    assert shared.points == ((5, 5), (7, 7))
