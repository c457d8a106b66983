"""One flow's offset translation, from what its copy wrote to Kafka.

Reads the flow's offset syncs and its progress (``mm2-offsets.<S>.internal`` on the
target) incrementally, keeps a :class:`SyncHistory` per source partition, and answers
with :func:`srm_common.domain.translation.translate`: exact, or declined with the reason.
Progress is read before syncs each time; the rule checks that they agree, so the order
only decides how fresh the answer is, never whether it is right.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from srm_common.adapters.kafka_reader import FirstRecords, KafkaReadError, TopicTail
from srm_common.config.model import FlowConfig
from srm_common.domain.connect_offsets import decode_source_offset
from srm_common.domain.policy import mm2_offsets_topic
from srm_common.domain.progress import Progress
from srm_common.domain.records import OffsetSync
from srm_common.domain.translation import SyncHistory, Translation
from srm_common.errors import RecordFormatError

log = logging.getLogger(__name__)

Key = tuple[str, int]


class FlowOffsets:
    """See the module docstring. ``refresh()`` before translating; ``close()`` at the end."""

    def __init__(self, flow: FlowConfig, *, timeout: float = 30.0) -> None:
        self.flow = flow
        self.policy = flow.replication_policy()
        self.shared = flow.keeps_topic_names
        if flow.offset_syncs_topic_location == "target":
            topic, config = self.policy.offset_syncs_topic(flow.source), flow.target_consumer
        else:
            topic, config = self.policy.offset_syncs_topic(flow.target), flow.source_consumer
        self._syncs = TopicTail(config, topic, timeout=timeout)
        self._progress = TopicTail(
            flow.target_consumer, mm2_offsets_topic(flow.source), timeout=timeout
        )
        self._source = FirstRecords(flow.source_consumer)
        self._first: dict[tuple[str, int, int], int] = {}
        self.histories: dict[Key, SyncHistory] = {}
        self.positions: dict[Key, Progress] = {}

    def refresh(self) -> None:
        """Take in what the copy wrote since the last refresh (KafkaReadError if a
        cluster does not answer)."""
        for message in self._progress.catch_up():
            self._take_progress(message.key(), message.value())
        for message in self._syncs.catch_up():
            try:
                sync = OffsetSync.decode(message.key(), message.value())
            except RecordFormatError as exc:
                log.warning("ignoring a record of %s: %s", self._syncs.topic, exc)
                continue
            key = (sync.topic, sync.partition)
            history = self.histories.get(key)
            if history is None:
                history = self.histories[key] = SyncHistory(shared=self.shared)
            history.add(sync.upstream_offset, sync.downstream_offset)

    def _take_progress(self, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            return
        try:
            offset = decode_source_offset(key, value)
            if offset is None or offset.cluster != self.flow.source:
                return
            where = (offset.topic, offset.partition)
            if value is None:
                self.positions.pop(where, None)
            else:
                self.positions[where] = Progress.decode_value(value)
        except RecordFormatError as exc:
            log.warning("ignoring a record of %s: %s", self._progress.topic, exc)

    def forget(self, lowest: Mapping[Key, int], *, keep: int) -> None:
        """Bound memory: drop syncs below the lowest commit of the groups translated
        (``lowest`` per partition); partitions none of them reads keep the last ``keep``."""
        for key, history in self.histories.items():
            if key in lowest:
                history.forget_before(lowest[key])
            elif len(history) > keep:
                history.forget_before(history.points[-keep // 2][0])

    def remote_topic(self, topic: str) -> str:
        return self.policy.format_remote_topic(self.flow.source, topic)

    def source_topic(self, remote_topic: str) -> str | None:
        """The source topic a remote topic of this flow copies; None if it is not one."""
        if self.shared:
            return remote_topic
        if self.policy.topic_source(remote_topic) != self.flow.source:
            return None
        return self.policy.upstream_topic(remote_topic)

    def forward(self, topic: str, partition: int, offset: int) -> Translation:
        """A source group offset's translation on the remote partition."""
        history = self.histories.get((topic, partition))
        if history is None:
            return Translation(None, "no offset sync for this partition yet")
        progress = self.positions.get((topic, partition))
        position = None
        if progress is not None and progress.next_downstream is not None:
            position = (progress.next_upstream, progress.next_downstream)
        answer = history.forward(offset, position)
        if answer.exact or self.shared:
            return answer
        # Declined at an end of the history: the source itself says which record the
        # group reads next, and whether that one is in the history.
        if history.past_last(offset):
            last_up = history.points[-1][0]
            return history.forward(
                offset, position, self._first_record(topic, partition, last_up + 1)
            )
        if offset < history.points[0][0]:
            first = self._first_record(topic, partition, offset)
            if first is not None and first <= history.points[-1][0]:
                return history.forward(first, position)
        return answer

    def _first_record(self, topic: str, partition: int, start: int) -> int | None:
        """The offset of the first committed source record at or after ``start``; the
        largest offset when there is none (a group, which commits only what it read, is
        then at most at the end, past only markers and aborted records); None when the
        source cannot be read."""
        key = (topic, partition, start)
        known = self._first.get(key)
        if known is not None:
            return known  # records do not move: an answer found stays true
        try:
            found = self._source.at_or_after(topic, partition, start)
        except KafkaReadError as exc:
            log.info("cannot look at %s: %s", self.flow.source, exc)
            return None
        if found is None:
            return 2**63 - 1  # asked again next time: a record may come
        if len(self._first) > 10_000:
            self._first.clear()
        self._first[key] = found
        return found

    def backward(self, topic: str, partition: int, remote_offset: int) -> Translation:
        """A group offset on the remote partition translated back to the source topic
        ``topic`` (failback)."""
        history = self.histories.get((topic, partition))
        if history is None:
            return Translation(None, "no offset sync for this partition yet")
        return history.backward(remote_offset)

    def close(self) -> None:
        self._syncs.close()
        self._progress.close()
        self._source.close()
