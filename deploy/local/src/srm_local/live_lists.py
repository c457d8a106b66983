"""The flows as the event logs have them now, for the plan ``make up`` prints.

The config file only seeds each flow's switch and lists; srm-control changes them in
the log of the flow's target cluster (docs/control-path.md). So the watch loop follows
every target's log and plans with the flows they describe, and says when an srm-control
change altered the plan. A target whose cluster is down keeps the lists last read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace

from srm_common.adapters.event_log_reader import EventLogReader
from srm_common.config.control import ControlSettings, control_plane, effective_flow
from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.control.state import ControlState
from srm_common.log_follower import LogFollower, LogReader

log = logging.getLogger(__name__)


class LiveLists:
    """Follows every target's log; :meth:`config` is the file's config with the logs'
    lists. ``readers``: an opener of each target's log reader (default: the Kafka ones of
    the file's settings)."""

    def __init__(
        self, config: SrmConfig, readers: Mapping[str, Callable[[], LogReader]] | None = None
    ) -> None:
        self.file_config = config
        if readers is None:
            plane = control_plane(config)
            readers = {t: self._kafka_reader(s) for t, s in plane.logs.items()}
        self.followers = {
            target: LogFollower(opener, name=f"the log of {target}")
            for target, opener in readers.items()
        }

    @staticmethod
    def _kafka_reader(settings: ControlSettings) -> Callable[[], LogReader]:
        return lambda: EventLogReader(settings, client_id="srm-local-plan")

    def state_of(self, target: str) -> ControlState:
        follower = self.followers.get(target)
        return follower.state if follower is not None else ControlState()

    def config(self) -> SrmConfig:
        flows = {key: self._flow(flow) for key, flow in self.file_config.flows.items()}
        return replace(self.file_config, flows=flows)

    def _flow(self, flow: FlowConfig) -> FlowConfig:
        state = self.state_of(flow.target)
        if flow.name not in state.flows:  # not seeded yet: the file is all there is
            return flow
        return effective_flow(flow, state.flow(flow.name))

    def poll(self) -> bool:
        """Fold what the logs have new; True when a flow's switch or lists changed."""
        before = self.config()
        for follower in self.followers.values():
            try:
                follower.step(0)
            except Exception as exc:  # noqa: BLE001 - the plan then shows the last lists
                log.debug("%s not readable now: %s", follower.name, exc)
        return self.config() != before

    def close(self) -> None:
        for follower in self.followers.values():
            follower.close()
