"""The composition root: every adapter of a coordinator built from its validated settings.

Nothing else in the coordinator builds a Kafka client; :class:`Coordinator` receives
factories (:class:`~srm_coordinator.ports.Adapters`). Tests build one from fakes the
same way, through its constructor.
"""

from __future__ import annotations

from srm_common.adapters.discovery import Discovery
from srm_common.adapters.fence_topic import FenceWriter
from srm_common.adapters.kafka_log import (
    BeatReader,
    EventLogEnd,
    EventLogReader,
    EventLogWriter,
    ensure_control_topics,
)
from srm_common.config.control import ControlSettings
from srm_common.config.model import SrmConfig

from srm_coordinator.election import Candidacy
from srm_coordinator.log_memory import LogMemory
from srm_coordinator.ports import Adapters
from srm_coordinator.service import Coordinator


def real_adapters(settings: ControlSettings) -> Adapters:
    """The Kafka event log, heartbeats and election of ``settings``' control cluster, and
    discovery by each flow's source admin client."""
    return Adapters(
        prepare=lambda create_events: ensure_control_topics(settings, create_events=create_events),
        reader=lambda client_id, known_log: EventLogReader(
            settings, client_id=client_id, known_log=known_log
        ),
        writer=lambda client_id: EventLogWriter(settings, client_id=client_id),
        log_end=lambda: EventLogEnd(settings),
        beats=lambda client_id, since_ms: BeatReader(
            settings, client_id=client_id, since_ms=since_ms
        ),
        election=lambda member: Candidacy(settings, member),
        discovery=Discovery,
        fence_writer=lambda cluster: FenceWriter(
            settings, cluster, client_id=f"{settings.prefix}-fencer-{cluster}"
        ),
    )


def build(
    config: SrmConfig,
    settings: ControlSettings,
    *,
    coordinator_id: str | None = None,
    memory: LogMemory | None = None,
    apply_config: bool = False,
) -> Coordinator:
    """A coordinator on Kafka; nothing is read or joined until :meth:`Coordinator.run`."""
    return Coordinator(
        config,
        settings,
        real_adapters(settings),
        coordinator_id=coordinator_id,
        memory=memory,
        apply_config=apply_config,
    )
