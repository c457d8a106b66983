"""The flows as the event log has them now, for the plan ``make up`` prints.

The config file only seeds each flow's switch and lists; srm-control changes them in
the event log (docs/control-path.md). So the watch loop tails the log and plans with
the flows it describes, and says when an srm-control change altered the plan.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from srm_common.adapters.kafka_log import EventLogReader
from srm_common.config.control import control_settings, effective_flow
from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.control.state import ControlState
from srm_common.log_follower import LogFollower, LogReader

log = logging.getLogger(__name__)


class LiveLists:
    """Follows the event log; :meth:`config` is the file's config with the log's lists.
    ``reader`` opens the log's reader (default: the Kafka one of the file's settings)."""

    def __init__(self, config: SrmConfig, reader: Callable[[], LogReader] | None = None) -> None:
        self.file_config = config
        self.follower = LogFollower(reader or self._kafka_reader, name="the event log")

    @property
    def state(self) -> ControlState:
        return self.follower.state

    def _kafka_reader(self) -> LogReader:
        settings = control_settings(self.file_config)
        return EventLogReader(settings, client_id="srm-local-plan")

    def config(self) -> SrmConfig:
        flows = {key: self._flow(flow) for key, flow in self.file_config.flows.items()}
        return replace(self.file_config, flows=flows)

    def _flow(self, flow: FlowConfig) -> FlowConfig:
        if flow.name not in self.state.flows:  # not seeded yet: the file is all there is
            return flow
        return effective_flow(flow, self.state.flow(flow.name))

    def poll(self) -> bool:
        """Fold what the log has new; True when a flow's switch or lists changed."""
        before = self.config()
        try:
            self.follower.step(0)
        except Exception as exc:  # noqa: BLE001 - the plan then shows the file's lists
            log.debug("event log not readable yet: %s", exc)
            return False
        return self.config() != before

    def close(self) -> None:
        self.follower.close()
