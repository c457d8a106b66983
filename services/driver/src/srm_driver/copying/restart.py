"""Where a partition (re)starts: the facts read, the records past the recorded position
compared, and the core's decision (:mod:`srm_common.domain.progress`) taken.

Reads Kafka, changes nothing: the copy service records the outcome.
"""

from __future__ import annotations

from dataclasses import dataclass

from srm_common.domain.progress import (
    Halt,
    PartitionFacts,
    Progress,
    Resume,
    Verify,
    offset_syncs,
    reconcile,
    reconcile_shared,
)
from srm_common.domain.resume import resume_from
from srm_common.errors import SrmError

from srm_driver.copying.ports import FlowAdapters
from srm_driver.copying.state import ResumeRequest

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class Restart:
    """A decision, with the (upstream, downstream) pairs of verified records whose syncs
    must be written before the new progress."""

    decision: Resume | Halt
    syncs: tuple[tuple[int, int], ...] = ()


def decide_restart(
    adapters: FlowAdapters,
    key: TopicPartition,
    remote: str,
    where: str,
    progress: Progress | None,
    facts: PartitionFacts,
    request: ResumeRequest | None,
) -> Restart:
    """The restart of ``key`` from ``progress`` (the durable one moved to what was
    acknowledged), or the operator's ``request``; ``SrmError`` when Kafka did not answer."""
    if request is not None:
        try:
            resumed = resume_from(request.point, progress, facts)
        except ValueError as exc:
            return Restart(
                Halt("conflict", f"the resume asked by {request.by} cannot be applied: {exc}")
            )
        return Restart(resumed)
    if adapters.shared:
        last = None
        if progress is not None and facts.target_topic_id is not None:
            start = progress.next_downstream or 0
            last = adapters.facts.last_copied(key, remote, start)
        return Restart(reconcile_shared(progress, facts, where=where, last_copied=last))
    decision = reconcile(progress, facts, where=where)
    if not isinstance(decision, Verify):
        return Restart(decision)
    surplus, pairs = adapters.facts.compare(
        key, remote, decision.start, decision.downstream, decision.count
    )
    settled = reconcile(progress, facts, where=where, surplus=surplus)
    if isinstance(settled, Verify):  # the core never asks twice; a defect if it does
        raise SrmError(f"{where}: verification did not settle the position")
    return Restart(settled, tuple(offset_syncs(pairs, shared=False)))


def identity_changed(progress: Progress, source_id: str | None, target_id: str | None) -> bool:
    """The source or remote topic is gone, or not the one the progress was recorded for."""
    return (
        source_id is None
        or target_id is None
        or source_id != (progress.source_topic_id or source_id)
        or target_id != (progress.target_topic_id or target_id)
    )
