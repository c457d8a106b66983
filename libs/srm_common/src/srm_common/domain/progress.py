"""Copy progress per upstream partition, and where a copy (re)starts: pure decisions.

Progress lives where MirrorSourceConnector keeps its offsets (``mm2-offsets.<S>.internal``
on the target), under MM2's key, with MM2's ``offset`` (last upstream offset copied, so
MM2 itself could resume from our records) plus fields of ours that MM2 ignores:

* ``srm.downstream``: the remote partition's end offset after that record, i.e. the
  downstream offset the next copied record gets;
* ``srm.inflight.end``: the *reservation*, written before any record at or past the
  recorded position is sent: the exclusive upstream end below which the writer may have
  sent more records. Absent after a clean release (nothing can be in flight);
* ``srm.source.topic.id`` / ``srm.target.topic.id``: the Kafka topic ids the copy was
  made between, so a deleted and recreated topic is never taken for the old one;
* ``srm.resume``: the id of the last operator resume applied (applied once, however
  often its event is replayed).

Why a restart never guesses (docs/driver.md, exactly once): a remote partition has one
writer at a time (fenced, docs/design.md), which writes in order with an idempotent
producer that stops at its first failure. So past ``srm.downstream`` the remote
partition holds at most a prefix of the reserved range. The restart does not trust that:
it compares each such record with the source record it must be a copy of (key, value,
headers, timestamp) and continues after the last one that matches only if *all* match.
Anything else (more records than the reservation allows, a record that is not the
expected copy, a topic recreated, a source that ends before our position, no progress
for a remote partition that holds records) halts the partition with the reason and
what the operator can do; nothing is skipped on a guess.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from srm_common.errors import RecordFormatError

DOWNSTREAM_FIELD = "srm.downstream"
INFLIGHT_FIELD = "srm.inflight.end"
SOURCE_TOPIC_ID_FIELD = "srm.source.topic.id"
TARGET_TOPIC_ID_FIELD = "srm.target.topic.id"
RESUME_FIELD = "srm.resume"

HaltKind = Literal["conflict", "recreated", "truncated", "missing", "retention", "poison"]


@dataclass(frozen=True, slots=True)
class Progress:
    """Recorded progress of one upstream partition.

    ``next_upstream``: the first upstream offset not yet copied (MM2's offset + 1).
    ``next_downstream``: where the next copy lands; ``None`` when the record came from
    MM2 (no such field), in which case the remote partition's end is trusted.
    ``inflight_end``: exclusive upstream end of the reservation (see the module).
    """

    next_upstream: int
    next_downstream: int | None = None
    inflight_end: int | None = None
    source_topic_id: str | None = None
    target_topic_id: str | None = None
    resume_id: str | None = None

    def encode_value(self) -> bytes:
        """Compact JSON; ``offset`` first, as MM2's reader only looks at that field."""
        fields = [f'"offset":{self.next_upstream - 1}']
        if self.next_downstream is not None:
            fields.append(f'"{DOWNSTREAM_FIELD}":{self.next_downstream}')
        if self.inflight_end is not None:
            fields.append(f'"{INFLIGHT_FIELD}":{self.inflight_end}')
        for name, text in (
            (SOURCE_TOPIC_ID_FIELD, self.source_topic_id),
            (TARGET_TOPIC_ID_FIELD, self.target_topic_id),
            (RESUME_FIELD, self.resume_id),
        ):
            if text is not None:
                fields.append(f'"{name}":{json.dumps(text)}')
        return ("{" + ",".join(fields) + "}").encode()

    def reserved(self, inflight_end: int | None) -> Progress:
        """The same position with another reservation (None: nothing may be in flight)."""
        return replace(self, inflight_end=inflight_end)

    @classmethod
    def decode_value(cls, value: bytes) -> Progress:
        """Read ``{"offset":N, ...}``; our fields are optional (MM2 writes none of them)."""
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
            source_topic_id=_text(body, SOURCE_TOPIC_ID_FIELD, value),
            target_topic_id=_text(body, TARGET_TOPIC_ID_FIELD, value),
            resume_id=_text(body, RESUME_FIELD, value),
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


def _text(body: dict[str, object], name: str, value: bytes) -> str | None:
    found = body.get(name)
    if found is None:
        return None
    if not isinstance(found, str):
        raise RecordFormatError(f"progress value {value!r}: '{name}' must be a string")
    return found


@dataclass(frozen=True, slots=True)
class PartitionFacts:
    """What the driver reads before (re)starting one partition.

    Topic ids are Kafka's (base64 text); ``None`` means the topic does not exist now.
    ``source_end`` is the source partition's high watermark, ``target_end`` the remote
    partition's.
    """

    source_topic_id: str | None
    source_log_start: int
    source_end: int
    target_topic_id: str | None
    target_end: int


@dataclass(frozen=True, slots=True)
class Surplus:
    """What comparing the remote partition's records past the recorded position with the
    source's records from the recorded position found.

    ``matched``: how many leading remote records are, in order, copies of the source's
    (equal key, value, headers and timestamp). ``next_upstream``: the upstream offset
    after the last matched source record. ``mismatch``: the first difference, for the
    operator (``None`` when every compared record matched).
    """

    matched: int
    next_upstream: int
    mismatch: str | None = None


@dataclass(frozen=True, slots=True)
class Verify:
    """The remote partition holds ``count`` records past downstream offset ``downstream``;
    compare them with the source's records from upstream ``start``, then decide again
    with the :class:`Surplus` found."""

    start: int
    downstream: int
    count: int


@dataclass(frozen=True, slots=True)
class Resume:
    """Copy on from upstream ``start``; its copy lands at downstream ``downstream``.

    ``lost``: upstream offsets retention deleted before they were copied (the range
    ``[start - lost, start)``). ``verified``: remote records past the recorded position
    proven to be the copies of the source records before ``start``.
    """

    start: int
    downstream: int
    lost: int = 0
    verified: int = 0

    def progress(self, facts: PartitionFacts, resume_id: str | None = None) -> Progress:
        """The progress this position stands for, between the topics of ``facts``."""
        return Progress(
            self.start,
            self.downstream,
            None,
            facts.source_topic_id,
            facts.target_topic_id,
            resume_id,
        )


@dataclass(frozen=True, slots=True)
class Halt:
    """The partition cannot go on without guessing; ``reason`` tells the operator why and
    what to do, ``kind`` classifies it for status, events and metrics."""

    kind: HaltKind
    reason: str


def reconcile(
    progress: Progress | None,
    facts: PartitionFacts,
    *,
    where: str,
    surplus: Surplus | None = None,
) -> Resume | Halt | Verify:
    """Where a (re)starting copy of one partition continues, or why it must not.

    ``where`` names the pair for messages (``primary:orders-0 -> backup:primary.orders-0``).
    Returns :class:`Verify` when remote records past the recorded position must be
    compared first; call again with the :class:`Surplus` found.

    Worked example: progress ``(next_upstream=50, next_downstream=20, inflight_end=90)``,
    remote end 27: seven records past 20, at most 40 allowed by the reservation, so
    ``Verify(start=50, downstream=20, count=7)``; if the seven are copies of upstream
    50..58 (a gap at 53), ``Resume(start=59, downstream=27, verified=7)``.
    """
    halted = _identity_problem(progress, facts, where)
    if halted is not None:
        return halted
    if progress is None:
        if facts.target_end > 0:
            return Halt(
                "conflict",
                f"{where}: the remote partition already holds records up to offset"
                f" {facts.target_end} but no progress is recorded for it; something else"
                " wrote them (or the offsets topic was lost). Delete the remote topic to copy"
                " again from the start, or resume the partition with srm-control (--from"
                " source-start or --from source-end)",
            )
        return Resume(start=facts.source_log_start, downstream=0)
    if facts.source_end < progress.next_upstream:
        return Halt(
            "truncated",
            f"{where}: the source partition ends at offset {facts.source_end}, before the"
            f" copied position {progress.next_upstream}; it was truncated (unclean leader"
            " election) or recreated. Resume it with srm-control once you know what the"
            " source holds (--from source-start copies it all again)",
        )
    if progress.next_downstream is None:  # MM2's record: at-least-once, trust the target
        return _after_retention(
            Resume(start=progress.next_upstream, downstream=facts.target_end),
            facts.source_log_start,
        )
    count = facts.target_end - progress.next_downstream
    if count < 0:
        return Halt(
            "truncated",
            f"{where}: the remote partition ends at offset {facts.target_end}, before the"
            f" recorded {progress.next_downstream}; it was truncated. Resume it with"
            " srm-control (--from copy-end continues after what it holds)",
        )
    if count == 0:
        resume = Resume(start=progress.next_upstream, downstream=progress.next_downstream)
        return _after_retention(resume, facts.source_log_start)
    allowed = (progress.inflight_end or progress.next_upstream) - progress.next_upstream
    if count > allowed:
        reserved = (
            "nothing was in flight"
            if progress.inflight_end is None
            else f"the writer in flight could have added at most {allowed}"
        )
        return Halt(
            "conflict",
            f"{where}: the remote partition holds {count} records more than recorded"
            f" (offsets {progress.next_downstream}..{facts.target_end - 1}) and {reserved};"
            " something else writes to it. Stop that writer, then resume the partition with"
            " srm-control (--from copy-end keeps what the remote partition holds)",
        )
    if facts.source_log_start > progress.next_upstream:
        return Halt(
            "retention",
            f"{where}: retention deleted source records from {progress.next_upstream} (log"
            f" start now {facts.source_log_start}) before the {count} remote records past the"
            " recorded position could be checked against them. Resume with srm-control"
            " (--from copy-end) to keep them as they are",
        )
    if surplus is None:
        return Verify(progress.next_upstream, progress.next_downstream, count)
    if surplus.matched < count:
        return Halt(
            "conflict",
            f"{where}: remote offset {progress.next_downstream + surplus.matched} is not the"
            f" copy of the next source record ({surplus.mismatch or 'the source has fewer'});"
            " something else wrote to the remote partition. Stop that writer, then resume"
            " the partition with srm-control",
        )
    return Resume(start=surplus.next_upstream, downstream=facts.target_end, verified=count)


def reconcile_shared(
    progress: Progress | None,
    facts: PartitionFacts,
    *,
    where: str,
    last_copied: int | None,
) -> Resume | Halt:
    """Resume for a remote partition that other producers write too (identity policy).

    Counting records cannot work there, so each copy names its upstream offset in a
    header and the restart looks for the last one at or after the recorded downstream
    position: ``last_copied`` (None when none landed). The next copy starts right after
    it; ``downstream`` is only where the next restart starts looking.
    """
    halted = _identity_problem(progress, facts, where)
    if halted is not None:
        return halted
    if progress is None:
        start = facts.source_log_start
    elif last_copied is not None and last_copied >= progress.next_upstream:
        start = last_copied + 1
    else:
        start = progress.next_upstream
    if facts.source_end < start:
        return Halt(
            "truncated",
            f"{where}: the source partition ends at offset {facts.source_end}, before the"
            f" copied position {start}; it was truncated or recreated. Resume it with"
            " srm-control once you know what the source holds",
        )
    return _after_retention(
        Resume(start=start, downstream=facts.target_end), facts.source_log_start
    )


def offset_syncs(pairs: Sequence[tuple[int, int]], *, shared: bool) -> list[tuple[int, int]]:
    """The offset syncs of consecutive copies ``(upstream, downstream)``, in copy order.

    The first and the last copy, and both sides of every gap: upstream (compaction,
    transaction markers, dropped records) and, when the remote partition is shared,
    downstream. With these, translation is exact (DESIGN.md, beyond MM2 1). The copy
    slots (:mod:`srm_driver.copier.partition`) apply the same rule to acknowledgements;
    ``golden/offset_syncs.json`` holds the cases both are tested against.
    """
    syncs: list[tuple[int, int]] = []
    previous: tuple[int, int] | None = None
    for up, down in pairs:
        if previous is None:
            syncs.append((up, down))
        elif up != previous[0] + 1 or (shared and down != previous[1] + 1):
            if syncs[-1] != previous:
                syncs.append(previous)
            syncs.append((up, down))
        previous = (up, down)
    if previous is not None and syncs[-1] != previous:
        syncs.append(previous)
    return syncs


def _identity_problem(progress: Progress | None, facts: PartitionFacts, where: str) -> Halt | None:
    """A topic missing or recreated since the progress was recorded."""
    for side, recorded, current in (
        ("source", progress.source_topic_id if progress else None, facts.source_topic_id),
        ("remote", progress.target_topic_id if progress else None, facts.target_topic_id),
    ):
        if current is None:
            return Halt(
                "missing",
                f"{where}: the {side} topic does not exist (deleted?); nothing is copied until"
                " it exists again and the partition is resumed with srm-control",
            )
        if recorded is not None and recorded != current:
            fix = (
                "--from source-start copies the new topic from its start"
                if side == "source"
                else "--from source-start copies everything again into the new topic,"
                " --from copy-end continues where the copy was"
            )
            return Halt(
                "recreated",
                f"{where}: the {side} topic was deleted and recreated (topic id {recorded} ->"
                f" {current}); the recorded position belongs to the old topic. Resume the"
                f" partition with srm-control: {fix}",
            )
    return None


def _after_retention(resume: Resume, source_log_start: int) -> Resume:
    if source_log_start <= resume.start:
        return resume
    return Resume(
        start=source_log_start,
        downstream=resume.downstream,
        lost=source_log_start - resume.start,
    )
