"""Copy progress per upstream partition, and the exactly-once resume decision.

Progress lives where MirrorSourceConnector keeps its offsets (``mm2-offsets.<S>.internal``
on the target), under MM2's key, with MM2's ``offset`` (last upstream offset copied, so
MM2 itself could resume from our records) plus two fields of ours that MM2 ignores:

* ``srm.downstream``: the remote partition's end offset after that record, i.e. the
  downstream offset the next copied record gets;
* ``srm.inflight.end``: written just before a batch starts, the exclusive upstream end of
  the batch in flight; absent after the batch is recorded.

Why this gives exactly once without transactions (DESIGN.md, the data path): a remote
partition is written only by its upstream partition, in order, by an idempotent producer
that stops at the first failure, so after a crash it holds a *prefix* of the batch that
was in flight. The difference between its end offset and ``srm.downstream`` is how many
records of that batch are already there; the retry skips exactly that many (records, not
offsets: compaction and transaction markers leave gaps upstream).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from srm_common.errors import RecordFormatError

DOWNSTREAM_FIELD = "srm.downstream"
INFLIGHT_FIELD = "srm.inflight.end"


@dataclass(frozen=True, slots=True)
class Progress:
    """Recorded progress of one upstream partition.

    ``next_upstream``: the first upstream offset not yet copied (MM2's offset + 1).
    ``next_downstream``: where the next copy lands; ``None`` when the record came from
    MM2 (no such field), in which case the remote partition's end is trusted.
    ``inflight_end``: exclusive upstream end of a batch started but not recorded.
    """

    next_upstream: int
    next_downstream: int | None = None
    inflight_end: int | None = None

    def encode_value(self) -> bytes:
        """Compact JSON; ``offset`` first, as MM2's reader only looks at that field."""
        fields = [f'"offset":{self.next_upstream - 1}']
        if self.next_downstream is not None:
            fields.append(f'"{DOWNSTREAM_FIELD}":{self.next_downstream}')
        if self.inflight_end is not None:
            fields.append(f'"{INFLIGHT_FIELD}":{self.inflight_end}')
        return ("{" + ",".join(fields) + "}").encode()

    def started(self, inflight_end: int) -> Progress:
        """The record written before a batch ``[next_upstream, inflight_end)`` runs."""
        return Progress(self.next_upstream, self.next_downstream, inflight_end)

    @classmethod
    def decode_value(cls, value: bytes) -> Progress:
        """Read ``{"offset":N, ...}``; our two fields are optional (MM2 writes neither)."""
        try:
            body = json.loads(value)
        except ValueError as exc:
            raise RecordFormatError(f"progress value {value!r} is not UTF-8 JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise RecordFormatError(f"progress value {value!r} is not a JSON object")
        offset = _integer(body, "offset", value, required=True)
        assert offset is not None
        return cls(
            next_upstream=offset + 1,
            next_downstream=_integer(body, DOWNSTREAM_FIELD, value),
            inflight_end=_integer(body, INFLIGHT_FIELD, value),
        )


def _integer(
    body: dict[str, object], name: str, value: bytes, *, required: bool = False
) -> int | None:
    found = body.get(name)
    if found is None and not required:
        return None
    if not isinstance(found, int) or isinstance(found, bool):
        raise RecordFormatError(f"progress value {value!r}: '{name}' must be a whole number")
    return found


@dataclass(frozen=True, slots=True)
class Resume:
    """Copy on from ``start``; the first ``skip`` records that pass are already on the
    target. ``downstream`` is where the first of them is. ``must_reach`` is the upstream
    end the next batch must cover (the interrupted batch), when skipping.
    ``lost`` counts upstream offsets that retention deleted before they were copied."""

    start: int
    downstream: int
    skip: int = 0
    must_reach: int | None = None
    lost: int = 0

    def progress(self) -> Progress:
        """The progress this resume position stands for (nothing in flight)."""
        return Progress(self.start, self.downstream)


@dataclass(frozen=True, slots=True)
class Halt:
    """The partition cannot resume without guessing; ``reason`` tells the operator why."""

    reason: str


def reconcile(
    progress: Progress | None,
    *,
    target_end: int,
    source_log_start: int,
    where: str,
) -> Resume | Halt:
    """Where a (re)starting copy of one partition continues, or why it must not.

    ``target_end`` is the remote partition's end offset now; ``source_log_start`` the
    upstream partition's earliest retained offset; ``where`` names the pair for messages
    (``primary:orders-0 -> backup:primary.orders-0``).
    """
    if progress is None:
        if target_end > 0:
            return Halt(
                f"{where}: the remote partition already holds records up to offset"
                f" {target_end} but no progress is recorded for it; something else wrote them"
                " (or the offsets topic was lost). Delete the remote topic to copy again"
                " from the start; nothing is copied until then"
            )
        return Resume(start=source_log_start, downstream=0)
    if progress.next_downstream is None:  # MM2's record: at-least-once, trust the target
        return _after_retention(
            Resume(start=progress.next_upstream, downstream=target_end), source_log_start
        )
    written = target_end - progress.next_downstream
    if written < 0:
        return Halt(
            f"{where}: the remote partition ends at offset {target_end}, before the recorded"
            f" {progress.next_downstream}; it was truncated or recreated. Delete the remote"
            " topic and its progress to copy again"
        )
    if written == 0:
        resume = Resume(start=progress.next_upstream, downstream=progress.next_downstream)
        return _after_retention(resume, source_log_start)
    inflight = progress.inflight_end
    if inflight is None or written > inflight - progress.next_upstream:
        batch = (
            "no batch was in flight"
            if inflight is None
            else (f"the batch in flight had at most {inflight - progress.next_upstream} records")
        )
        return Halt(
            f"{where}: the remote partition holds {written} records more than recorded and"
            f" {batch}; something else writes to it. Stop that writer; nothing is copied"
            " until the remote partition is consistent again"
        )
    if source_log_start > progress.next_upstream:
        return Halt(
            f"{where}: retention deleted upstream records of the interrupted batch (log start"
            f" {source_log_start} > {progress.next_upstream}) before the resume could count"
            " them; cannot tell which records are already copied"
        )
    return Resume(
        start=progress.next_upstream,
        downstream=progress.next_downstream,
        skip=written,
        must_reach=inflight,
    )


def _after_retention(resume: Resume, source_log_start: int) -> Resume:
    if source_log_start <= resume.start:
        return resume
    return Resume(
        start=source_log_start,
        downstream=resume.downstream,
        lost=source_log_start - resume.start,
    )


def batch_end(resume: Resume, *, committed_end: int, max_records: int) -> int | None:
    """Exclusive upstream end of the next batch from ``resume.start``, or None if idle.

    At most ``max_records`` offsets, never past ``committed_end`` (the last stable offset
    for read_committed), and at least ``must_reach`` when re-running an interrupted batch.
    """
    end = min(committed_end, resume.start + max_records)
    if resume.must_reach is not None:
        end = max(end, min(resume.must_reach, committed_end))
    return end if end > resume.start else None


def reconcile_shared(
    progress: Progress | None,
    *,
    last_copied: int | None,
    target_end: int,
    source_log_start: int,
) -> Resume:
    """Resume for a remote partition that other producers write too (identity policy).

    Counting records cannot work there, so each copy names its upstream offset in a
    header and the restart looks for the last one at or after the recorded downstream
    position: ``last_copied`` (None when none landed). No skip: the next batch starts
    right after it. ``downstream`` is only where the next restart starts looking.
    """
    if progress is None:
        start = source_log_start
    elif last_copied is not None and last_copied >= progress.next_upstream:
        start = last_copied + 1
    else:
        start = progress.next_upstream
    return _after_retention(Resume(start=start, downstream=target_end), source_log_start)
