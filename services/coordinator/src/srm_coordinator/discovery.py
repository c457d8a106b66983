"""What a flow would copy now: the source's matching partitions and consumer groups.

The leader asks when it takes over, when srm-control changes a flow's lists, when a
driver reports a change, and every ``refresh.topics.interval.seconds``. The rule is the
replication plan's (:func:`reason_not_replicated`), applied to the flow as the event log
has it.
"""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from srm_common.config.model import FlowConfig
from srm_common.domain.tasks import TopicPartition
from srm_common.errors import SrmError
from srm_common.replication_plan import replicated_partitions

TIMEOUT_S = 15.0


class DiscoveryError(SrmError):
    """The source cluster of a flow could not be listed."""


class Discovery:
    """Lists source clusters; one admin client per cluster, kept open."""

    def __init__(self) -> None:
        self._admins: dict[str, AdminClient] = {}

    def _admin(self, flow: FlowConfig) -> AdminClient:
        if flow.source not in self._admins:
            self._admins[flow.source] = AdminClient(dict(flow.source_admin))
        return self._admins[flow.source]

    def partitions(self, flow: FlowConfig) -> list[TopicPartition]:
        """Every partition of every source topic ``flow`` replicates, sorted."""
        try:
            metadata = self._admin(flow).list_topics(timeout=TIMEOUT_S)
        except KafkaException as exc:
            raise DiscoveryError(
                f"{flow.name}: cannot list topics of {flow.source}: {exc}"
            ) from exc
        counts = {
            name: len(topic.partitions)
            for name, topic in metadata.topics.items()
            if topic.error is None and topic.partitions
        }
        return replicated_partitions(flow, counts)

    def groups(self, flow: FlowConfig) -> list[str]:
        """Consumer groups of the source that the flow's group filter allows, sorted."""
        if not flow.emit_checkpoints_enabled or not flow.groups:
            return []
        try:
            listed = self._admin(flow).list_consumer_groups(request_timeout=TIMEOUT_S)
            result = listed.result(TIMEOUT_S)
        except KafkaException as exc:
            raise DiscoveryError(
                f"{flow.name}: cannot list groups of {flow.source}: {exc}"
            ) from exc
        allowed = flow.group_filter()
        return sorted(g.group_id for g in result.valid if allowed.matches(g.group_id))
