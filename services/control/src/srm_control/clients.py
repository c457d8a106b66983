"""The Kafka clients srm-control's commands open on a cluster of their own (``restore``,
``offsets``, ``failover``, ``failback``): factories that :func:`srm_control.cli.main`,
srm-control's composition root, builds once and hands to the commands, as it does the
HTTP :class:`~srm_control.sending.Sender`. The commands build no client themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import AdminClient
from srm_common.adapters.event_log_reader import EventLogReader
from srm_common.adapters.event_log_writer import EventLogWriter
from srm_common.adapters.flow_offsets import FlowOffsets
from srm_common.adapters.mirror_client import MirrorClient
from srm_common.config.control import ControlSettings
from srm_common.config.model import FlowConfig


@dataclass(frozen=True)
class KafkaClients:
    """``admin(keys)``: an admin client; ``log_reader(log, client_id)`` and
    ``log_writer(log, client_id)``: a target's event log; ``offsets(flow)``: a flow's
    offset translation (its syncs and progress); ``checkpoints(flow)``: a reader of the
    checkpoints on the flow's target (MirrorClient)."""

    admin: Callable[[Mapping[str, Any]], AdminClient]
    log_reader: Callable[[ControlSettings, str], EventLogReader]
    log_writer: Callable[[ControlSettings, str], EventLogWriter]
    offsets: Callable[[FlowConfig], FlowOffsets]
    checkpoints: Callable[[FlowConfig], MirrorClient]
