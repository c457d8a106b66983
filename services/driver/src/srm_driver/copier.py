"""Source tasks of one flow: copy batches of explicit offset ranges with one Spark job.

One batch, for every assigned upstream partition that has new committed records:

1. (first time, or after a failed batch) reconcile recorded progress with the remote
   partition's end offset: resume, skip what the interrupted batch already wrote, or halt;
2. plan ``[start, end)`` per partition (bounded, read_committed end);
3. record the batch as in flight, run one Spark job: Spark's Kafka source reads the ranges,
   ``RangeCopier`` writes them (same partition, key, value, headers, timestamp);
4. write offset syncs, then the new progress.

Records never pass through Python; Python sees one summary line per partition.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from srm_common.config.model import FlowConfig
from srm_common.domain.policy import ORIGIN_HEADER, IdentityReplicationPolicy
from srm_common.domain.progress import (
    Halt,
    Progress,
    Resume,
    batch_end,
    reconcile,
    reconcile_shared,
)
from srm_common.domain.records import OffsetSync

from srm_driver.internal_writer import InternalWriter
from srm_driver.kafka_admin import (
    admin_client,
    end_offsets,
    ensure_compacted_topic,
    partition_offsets,
)
from srm_driver.progress_store import ProgressStore
from srm_driver.shared_target import COPY_HEADER, last_copied_offset

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

# Kafka consumer options Spark's Kafka source refuses (it manages them itself).
_SPARK_MANAGED = {
    "auto.offset.reset",
    "enable.auto.commit",
    "key.deserializer",
    "value.deserializer",
    "interceptor.classes",
    "group.id",
}


@dataclass(frozen=True, slots=True)
class PartitionCopy:
    """What one batch did to one upstream partition (parsed from the copier's summary)."""

    passed: int = 0
    skipped: int = 0
    written: int = 0
    dropped: int = 0
    value_bytes: int = 0
    latency_sum_ms: int = 0
    latency_max_ms: int = 0
    last_downstream: int = -1
    syncs: tuple[tuple[int, int], ...] = ()

    @classmethod
    def parse(cls, line: str) -> tuple[TopicPartition, PartitionCopy]:
        fields = line.split("\t")
        topic, partition = fields[0], int(fields[1])
        numbers = [int(value) for value in fields[2:12]]
        passed, skipped, written, dropped, _first, _last, value_bytes = numbers[:7]
        lat_sum, lat_max, last_down = numbers[7:]
        syncs = tuple(
            (int(up), int(down))
            for up, down in (item.split(":") for item in fields[12].split(",") if item)
        )
        copy = cls(
            passed, skipped, written, dropped, value_bytes, lat_sum, lat_max, last_down, syncs
        )
        return (topic, partition), copy


@dataclass
class BatchReport:
    """One batch of a flow, for logs and metrics."""

    partitions: int = 0
    written: int = 0
    skipped: int = 0
    dropped: int = 0
    value_bytes: int = 0
    latency_sum_ms: int = 0
    latency_max_ms: int = 0
    lost: int = 0
    halted: dict[TopicPartition, str] = field(default_factory=dict)


class FlowCopier:
    """Copies the upstream partitions assigned to this driver for one flow."""

    def __init__(
        self,
        flow: FlowConfig,
        session: SparkSession,
        *,
        max_records: int,
        progress_partitions: int = 25,
        progress_replication_factor: int = -1,
    ) -> None:
        self.flow = flow
        self.session = session
        self.max_records = max_records
        self.policy = flow.replication_policy()
        self.store = ProgressStore(
            flow.source,
            flow.target_admin,
            flow.target_internal_producer,
            flow.target_consumer,
            partitions=progress_partitions,
            replication_factor=progress_replication_factor,
        )
        if flow.offset_syncs_topic_location == "target":
            syncs_topic = self.policy.offset_syncs_topic(flow.source)
            self._syncs_admin = admin_client(flow.target_admin)
            self.syncs = InternalWriter(syncs_topic, flow.target_internal_producer)
        else:
            syncs_topic = self.policy.offset_syncs_topic(flow.target)
            self._syncs_admin = admin_client(flow.source_admin)
            self.syncs = InternalWriter(syncs_topic, flow.source_producer)
        self._source_admin = admin_client(flow.source_admin)
        self._target_admin = admin_client(flow.target_admin)
        self._routes: dict[TopicPartition, str] = {}
        self._resume: dict[TopicPartition, Resume] = {}
        self._recorded: dict[TopicPartition, Progress] | None = None
        self.halted: dict[TopicPartition, str] = {}
        self._producer_config = self._writer_config(flow.target_producer)
        self._read_options = self._source_options(
            flow.source_consumer, f"srm-{flow.source}-{flow.target}-copier"
        )
        # Under the identity policy names do not change, so an origin header keeps
        # active/active loop free (DESIGN.md, beyond MM2 3), and the remote partition is
        # the target's own, written by its producers too ("shared").
        self._shared = isinstance(self.policy, IdentityReplicationPolicy)

    # -- set-up ----------------------------------------------------------------------

    def prepare(self) -> None:
        """Create the internal topics this flow writes and load recorded progress."""
        self.store.ensure_topic()
        ensure_compacted_topic(
            self._syncs_admin,
            self.syncs.topic,
            replication_factor=self.flow.offset_syncs_topic_replication_factor,
        )
        self._recorded = self.store.load()

    def assign(self, partitions: Mapping[TopicPartition, str]) -> None:
        """Copy exactly these upstream partitions (to the given remote topics) from now on."""
        for gone in set(self._routes) - set(partitions):
            self._resume.pop(gone, None)
            self.halted.pop(gone, None)
        if set(partitions) - set(self._routes):
            # A partition taken over from another driver resumes from what that driver
            # recorded, not from what this one loaded earlier.
            self._recorded = None
        self._routes = dict(partitions)

    @property
    def partitions(self) -> tuple[TopicPartition, ...]:
        return tuple(sorted(self._routes))

    # -- one batch -------------------------------------------------------------------

    def run_batch(self) -> BatchReport | None:
        """Copy one batch; None when there was nothing new to copy."""
        report = BatchReport()
        active = [tp for tp in sorted(self._routes) if tp not in self.halted]
        if not active:
            return None
        self._reconcile([tp for tp in active if tp not in self._resume], report)
        active = [tp for tp in active if tp in self._resume]
        ends = end_offsets(self._source_admin, active, read_committed=True)
        plan: dict[TopicPartition, tuple[Resume, int]] = {}
        for tp in active:
            resume = self._resume[tp]
            end = batch_end(resume, committed_end=ends[tp], max_records=self.max_records)
            if end is not None:
                plan[tp] = (resume, end)
        if not plan:
            return report if report.halted or report.lost else None
        self.store.write((tp, resume.progress().started(end)) for tp, (resume, end) in plan.items())
        try:
            copies = self._copy(plan)
        except Exception:
            # Reconcile against the target before the next attempt, from the store: it
            # holds the in-flight record just written.
            for tp in plan:
                self._resume.pop(tp, None)
            self._recorded = None
            self._await_quiet()
            raise
        self._record(plan, copies, report)
        return report

    def _reconcile(self, partitions: list[TopicPartition], report: BatchReport) -> None:
        if not partitions:
            return
        if self._recorded is None:
            self._recorded = self.store.load()
        remote = {tp: (self._routes[tp], tp[1]) for tp in partitions}
        targets = partition_offsets(self._target_admin, remote.values(), read_committed=False)
        sources = partition_offsets(self._source_admin, partitions, read_committed=True)
        for tp in partitions:
            where = (
                f"{self.flow.source}:{tp[0]}-{tp[1]} -> "
                f"{self.flow.target}:{self._routes[tp]}-{tp[1]}"
            )
            decision = self._decide(tp, where, targets[remote[tp]].end, sources[tp].log_start)
            if isinstance(decision, Halt):
                self.halted[tp] = decision.reason
                report.halted[tp] = decision.reason
                log.error("%s", decision.reason)
                continue
            if decision.lost:
                report.lost += decision.lost
                log.warning(
                    "%s: retention deleted %d upstream offsets before they were copied",
                    where,
                    decision.lost,
                )
            if decision.skip:
                log.info(
                    "%s: %d records of the interrupted batch are already there",
                    where,
                    decision.skip,
                )
            self._resume[tp] = decision

    def _await_quiet(self, timeout: float = 60.0) -> None:
        """Wait until no copy task runs in this JVM: Spark reports a failed job while
        sibling tasks are still being killed, and their last records must land before
        the reconcile reads the remote end offsets. (Local mode; on a Spark cluster the
        executors' tasks are not visible here and the retry delay has to do.)"""
        deadline = time.monotonic() + timeout
        try:
            copier = self.session.sparkContext._jvm.srm.driver.RangeCopier  # type: ignore[union-attr]
            while copier.activeTasks() > 0 and time.monotonic() < deadline:
                time.sleep(0.1)
        except Exception:  # noqa: BLE001 - the JVM is gone: nothing writes any more
            return

    def _decide(
        self, tp: TopicPartition, where: str, target_end: int, source_log_start: int
    ) -> Resume | Halt:
        assert self._recorded is not None
        progress = self._recorded.get(tp)
        if not self._shared:
            return reconcile(
                progress, target_end=target_end, source_log_start=source_log_start, where=where
            )
        last = None
        if progress is not None:
            last = last_copied_offset(
                self.flow.target_consumer,
                self._routes[tp],
                tp[1],
                start=progress.next_downstream or 0,
                source_alias=self.flow.source,
            )
        return reconcile_shared(
            progress, last_copied=last, target_end=target_end, source_log_start=source_log_start
        )

    def _copy(
        self, plan: Mapping[TopicPartition, tuple[Resume, int]]
    ) -> dict[TopicPartition, PartitionCopy]:
        assign: dict[str, list[int]] = {}
        starts: dict[str, dict[str, int]] = {}
        ends: dict[str, dict[str, int]] = {}
        copier_plan: dict[str, str] = {}
        for (topic, partition), (resume, end) in plan.items():
            assign.setdefault(topic, []).append(partition)
            starts.setdefault(topic, {})[str(partition)] = resume.start
            ends.setdefault(topic, {})[str(partition)] = end
            remote = self._routes[(topic, partition)]
            copier_plan[f"{topic}/{partition}"] = f"{remote}/{resume.skip}/{resume.downstream}"
        reader = self.session.read.format("kafka").options(**self._read_options)
        frame = (
            reader.option("assign", json.dumps(assign))
            .option("startingOffsets", json.dumps(starts))
            .option("endingOffsets", json.dumps(ends))
            .load()
        )
        context = self.session.sparkContext
        gateway = context._gateway  # type: ignore[attr-defined]
        from py4j.java_collections import MapConverter

        convert = MapConverter().convert
        client = gateway._gateway_client
        lines = context._jvm.srm.driver.RangeCopier.copy(  # type: ignore[union-attr]
            frame._jdf,
            convert(self._producer_config, client),
            convert(copier_plan, client),
            ORIGIN_HEADER if self._shared else None,
            COPY_HEADER if self._shared else None,
            self.flow.source,
            self.flow.target,
        )
        return dict(PartitionCopy.parse(str(line)) for line in lines)

    def _record(
        self,
        plan: Mapping[TopicPartition, tuple[Resume, int]],
        copies: Mapping[TopicPartition, PartitionCopy],
        report: BatchReport,
    ) -> None:
        syncs: list[tuple[bytes, bytes]] = []
        progress: list[tuple[TopicPartition, Progress]] = []
        for tp, (resume, end) in plan.items():
            copy = copies.get(tp, PartitionCopy())
            if copy.skipped != resume.skip:
                reason = (
                    f"{self.flow.source}:{tp[0]}-{tp[1]}: the remote partition holds"
                    f" {resume.skip} records of the interrupted batch but the batch has only"
                    f" {copy.skipped}; something else wrote to it. Nothing more is copied"
                )
                self.halted[tp] = reason
                report.halted[tp] = reason
                self._resume.pop(tp, None)
                log.error("%s", reason)
                continue
            for up, down in copy.syncs:
                sync = OffsetSync(tp[0], tp[1], up, down)
                syncs.append((sync.encode_key(), sync.encode_value()))
            if self._shared:  # where the next restart starts looking for our copies
                landed = copy.last_downstream + 1 if copy.written else resume.downstream
                after = Resume(start=end, downstream=landed)
            else:
                after = Resume(start=end, downstream=resume.downstream + copy.passed)
            self._resume[tp] = after
            progress.append((tp, after.progress()))
            report.partitions += 1
            report.written += copy.written
            report.skipped += copy.skipped
            report.dropped += copy.dropped
            report.value_bytes += copy.value_bytes
            report.latency_sum_ms += copy.latency_sum_ms
            report.latency_max_ms = max(report.latency_max_ms, copy.latency_max_ms)
        self.syncs.write(syncs)
        self.store.write(progress)
        self._recorded = None  # memory is authoritative from here; reload only on restart

    # -- configuration ---------------------------------------------------------------

    @staticmethod
    def _writer_config(target_producer: Mapping[str, str]) -> dict[str, str]:
        config = {"batch.size": "262144", "linger.ms": "5", **target_producer}
        # The resume needs the target to hold a prefix of every batch: one request in
        # flight and idempotence, whatever the configuration says.
        if config.get("max.in.flight.requests.per.connection", "1") != "1":
            log.warning("max.in.flight.requests.per.connection is forced to 1 for copied records")
        config.update(
            {
                "max.in.flight.requests.per.connection": "1",
                "enable.idempotence": "true",
                "acks": "all",
            }
        )
        return config

    @staticmethod
    def _source_options(source_consumer: Mapping[str, str], group_id: str) -> dict[str, str]:
        options = {
            f"kafka.{key}": value
            for key, value in source_consumer.items()
            if key not in _SPARK_MANAGED and key != "client.id"
        }
        options.setdefault("kafka.isolation.level", "read_committed")
        options["includeHeaders"] = "true"
        # One group id per flow (nothing is ever committed with it; partitions are
        # assigned): Spark keys its consumer and fetched-data caches by group id, so a
        # new id per batch would fill the heap with caches never used again, while a
        # stable one lets the next batch continue from the data the last one fetched.
        options["kafka.group.id"] = group_id
        return options

    def close(self) -> None:
        self.syncs.close()
        self.store.close()
