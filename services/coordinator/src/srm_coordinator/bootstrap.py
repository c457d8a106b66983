"""The composition root: every adapter of a coordinator built from its validated settings.

Nothing else in the coordinator builds a Kafka client; :class:`Coordinator` receives
factories (:class:`~srm_coordinator.ports.Adapters`), one set per target log it serves,
and :class:`~srm_coordinator.site.CoordinatorSite` runs them. Tests build one from fakes
the same way, through its constructor.
"""

from __future__ import annotations

import getpass
import socket
import time
import uuid
from collections.abc import Sequence

from srm_common.adapters import kafka_clients
from srm_common.adapters.control_topics import ensure_control_topics
from srm_common.adapters.discovery import Discovery
from srm_common.adapters.event_log_end import EventLogEnd
from srm_common.adapters.event_log_reader import EventLogReader
from srm_common.adapters.event_log_writer import EventLogWriter
from srm_common.adapters.heartbeats import BeatReader
from srm_common.config.control import ControlPlane, ControlSettings
from srm_common.config.model import SrmConfig
from srm_common.control.events import Envelope, LogMigrated
from srm_common.control.state import replay
from srm_common.errors import ControlLogError

from srm_coordinator.election import Candidacy, consumer_config
from srm_coordinator.log_memory import LogMemory
from srm_coordinator.migration import LegacyLog, Migration
from srm_coordinator.ports import Adapters
from srm_coordinator.service import Coordinator
from srm_coordinator.site import CoordinatorSite


def real_adapters(settings: ControlSettings, legacy: ControlSettings | None = None) -> Adapters:
    """The Kafka event log, heartbeats and election of one target's log (``settings``),
    the single log of an earlier release to move from (``legacy``), and discovery by
    each flow's source admin client."""
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
        election=lambda member: Candidacy(
            member,
            topic=settings.election_topic,
            consumer=lambda: kafka_clients.consumer(consumer_config(settings, member)),
        ),
        discovery=Discovery,
        legacy=None if legacy is None else (lambda: KafkaLegacyLog(legacy)),
    )


class KafkaLegacyLog(LegacyLog):
    """The single log of an earlier release on its control cluster (read, marked)."""

    def __init__(self, settings: ControlSettings) -> None:
        self.settings = settings

    def read(self) -> Migration | None:
        reader = EventLogReader(self.settings, client_id=f"srm-migration-{time.time_ns()}")
        try:
            events = reader.read_to_end(30, missing_ok=True)
            if reader.missing:
                return None
            if reader.problem is not None:
                raise ControlLogError(
                    f"cannot move the configuration of the log of an earlier release:"
                    f" {reader.problem.message}"
                )
        finally:
            reader.close()
        where = f"{self.settings.events_topic} on {self.settings.cluster}"
        return Migration(replay(events), where)

    def mark(self, target: str, log_id: str) -> None:
        writer = EventLogWriter(self.settings, client_id=f"srm-migration-{uuid.uuid4().hex[:8]}")
        try:
            writer.fence()
            by = f"{getpass.getuser()}@{socket.gethostname()} via srm-coordinator (migration)"
            writer.append([Envelope(LogMigrated(target, log_id), int(time.time() * 1000), by)])
        finally:
            writer.close()


def build(
    config: SrmConfig,
    plane: ControlPlane,
    *,
    coordinator_id: str,
    targets: Sequence[str] | None = None,
    memory: LogMemory | None = None,
    apply_config: bool = False,
) -> CoordinatorSite:
    """The coordinators of every target log served (``targets``; None: all) on Kafka;
    nothing is read or joined until :meth:`CoordinatorSite.run`."""
    served = plane.serving(targets)
    return CoordinatorSite(
        coordinator_id,
        {
            target: Coordinator(
                config,
                settings,
                real_adapters(settings, plane.legacy),
                coordinator_id=coordinator_id,
                memory=memory,
                apply_config=apply_config,
            )
            for target, settings in served.logs.items()
        },
    )
